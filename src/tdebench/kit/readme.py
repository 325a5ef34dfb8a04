"""The kit's README.md and run.sh: how to run the scripts with the engine's client, timing on,
logs where `tdebench import` looks for them, and no secret on a command line or in a file."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tdebench.kit.scripts import KitPlan, KitTrial
    from tdebench.kit.targets import Target

_CLIENT = {
    "sqlcmd": {
        "example": 'CLIENT="sqlcmd -S tcp:dbhost,1433 -U benchmark_admin -C"',
        "secrets": "sqlcmd reads the login's password from `SQLCMDPASSWORD` and the master key's from the "
                   "scripting variable `MASTER_KEY_PASSWORD`, both from the environment: "
                   "`read -rs SQLCMDPASSWORD && export SQLCMDPASSWORD`, and the same for `MASTER_KEY_PASSWORD` "
                   "(used only when the instance has no database master key yet; the setup creates one then and "
                   "the teardown drops it again, as the engine by url does). Never pass them with `-P` or `-v`: "
                   "argv is visible to every user.",
        "by_hand": "sqlcmd ... -i sf0.01/none/05-power.sql > logs/sf0.01/none/r1/05-power.log 2>&1",
        "timing": "`SET STATISTICS TIME ON` (in the timed scripts) makes the server print \"SQL Server parse and "
                  "compile time\" and \"SQL Server Execution Times: CPU time = n ms, elapsed time = n ms.\" after "
                  "every statement: server-side CPU and elapsed time, which `tdebench import` adds up per query.",
        "variables": "`DATA_DIR`: the directory on the server's host where you copied `data/<scale>/` "
                     "(BULK INSERT reads it as the server's service account),\n  e.g. "
                     "`export DATA_DIR=/var/opt/mssql/tdebench/sf0.01`.",
    },
    "sqlplus": {
        "example": "CLIENT='sqlplus -S -L \"/ as sysdba\"'   # or a wallet alias: sqlplus -S -L /@tdebench_admin",
        "secrets": "Connect with OS authentication or an Oracle wallet (secure external password store), or let "
                   "sqlplus prompt; never `user/password@db` on the command line. No script holds a secret: the TDE "
                   "keystore must already be open with a master key (`ADMINISTER KEY MANAGEMENT SET KEYSTORE OPEN "
                   "…`), which the setup checks in `v$encryption_wallet` and stops otherwise.",
        "by_hand": "sqlplus -S -L \"/ as sysdba\" @sf0.01/none/05-power.sql > logs/sf0.01/none/r1/05-power.log 2>&1",
        "timing": "`SET TIMING ON` (in the timed scripts) makes sqlplus print `Elapsed: 00:00:01.23` after every "
                  "statement: client-side elapsed time, round trips and fetching the rows included.",
        "variables": "`TDEBENCH_DATAFILE`: the path of the tablespace's data file on the server "
                     "(e.g. `/u02/oradata/ORCLPDB1/tdebench01.dbf`), and `TDEBENCH_CSV_DIR`: where you copied "
                     "`data/<scale>/` on the server's host (the external tables read it). run.sh DEFINEs both; "
                     "by hand, `DEFINE TDEBENCH_DATAFILE = '…'` before `@01-setup.sql`.",
    },
    "mysql": {
        "example": 'CLIENT="mysql --defaults-extra-file=$HOME/.tdebench-mysql.cnf -h dbhost"',
        "secrets": "Put the login in an option file of mode 0600 (`[client]` with `user=` and `password=`) and "
                   "name it with `--defaults-extra-file`, or let the client prompt (`-p` without a value); never "
                   "`-pPASSWORD` on the command line. No script holds a secret: the encrypted setup needs a keyring "
                   "component or plugin configured on the server (`CREATE DATABASE … DEFAULT ENCRYPTION='Y'` "
                   "fails without one).",
        "by_hand": "mysql ... -vvv --unbuffered --local-infile=1 --force < sf0.01/none/05-power.sql "
                   "> logs/sf0.01/none/r1/05-power.log 2>&1",
        "timing": "`-vvv` makes the client print each statement and `N rows in set (0.01 sec)`, `Empty set "
                  "(0.01 sec)` or `Query OK, … (0.01 sec)` after it, also in batch mode: client-side elapsed time. "
                  "`--unbuffered` keeps an error next to its statement in the log; `--force` (timed scripts only) "
                  "goes on after a failed query, which the import records as failed. LOAD DATA LOCAL needs "
                  "`--local-infile=1` and the server's `local_infile = ON`, and runs from the kit's directory.",
        "variables": "none.",
    },
}


def readme(target: Target, plan: KitPlan, trials: list[KitTrial]) -> str:
    """The kit's README.md."""
    client = _CLIENT[target.tool]
    first = trials[0]
    scripts = "\n".join(f"- `{s.file.split('/', 2)[2]}`" for s in first.scripts)
    canaries = "\n".join(f"- `{t.directory}`: " + " ".join(f"`--canary {c}`" for c in t.canaries) for t in trials)
    return f"""# tdebench script kit: {target.name}

Written by `tdebench script` from plan “{plan.name}”: TPC-H at scale {', '.join(f'{s:g}' for s in plan.scales)},
encryptions {', '.join(plan.encryptions)}, {plan.repetitions} rounds, {plan.warmups} warm-up and {plan.passes}
measured pass(es) of {' and '.join(plan.tests)}{_streams(plan)}.
tdebench cannot run {target.name} itself: these scripts run on your server with `{target.tool}`, their console
logs come back, and `tdebench import` turns them into a run that `tdebench report` and `tdebench compare` read.

## What is here

Per scale and encryption a directory (`{first.directory}/`, …) of numbered scripts, run in this order:

{scripts}

`data/<scale>/` holds the TPC-H tables as `|`-separated CSV (DuckDB's dbgen, the rows every tdebench engine
loads), `kit.json` what `tdebench import` needs, `plan.toml` the plan, `run.sh` the whole run.

## Running it

```sh
{client['example']}
export ...              # the variables below
./run.sh                # every round: each encryption's setup, schema, load, canaries, tests, teardown
tdebench import . --engine {target.name} --out RUN   # then: tdebench report RUN, tdebench compare OTHER RUN
```

- **Secrets.** {client['secrets']}
- **Variables.** {client['variables']}
- **Timing.** {client['timing']}
- **Logs.** run.sh writes `logs/<scale>/<encryption>/r<round>/<script>.log` (and `06-throughput-<pass>.wall`, the
  wall-clock seconds of a throughput pass, its streams run at once). By hand, keep that layout, e.g.
  `{client['by_hand']}`. `tdebench import` refuses a kit with a log missing, naming it.
- **Order.** Each round runs the encryptions in the plan's order, `none` first.{_order_note(target)}
- **Errors.** Setup, schema, load and canaries stop at the first error (run.sh stops too: run the teardown script
  before you try again); the timed scripts go on, and the import records a failed statement as a failed query.
- **Answers** are not checked (the logs hold them, tdebench does not read them back), so every query is
  `unchecked` in the run, or `failed`.

## Is it really encrypted? `tdebench verify`

`04-canaries.sql` writes random canary strings into `{"tdebench_canary"}` and prints the database's data files
and the engine's own encryption state into its log. To check them at rest, run with `PAUSE_BEFORE_TEARDOWN=1`:
run.sh then waits before each teardown. Stop the server cleanly (so every page is on disk) or copy the files
listed in the log (and the transaction log files) off the server, start it again, press Enter, and scan the
copies:

{canaries}

`tdebench verify COPIES --canary …` says `plaintext` (a canary found: exit 1), `encrypted` (0) or
`inconclusive` (3). For `none` it must say `plaintext`: that is the positive control.
"""


def _streams(plan: KitPlan) -> str:
    return f", {plan.streams} throughput streams" if "throughput" in plan.tests else ""


def _order_note(target: Target) -> str:
    if not target.encrypts_server_wide:
        return ""
    return (f" {target.encrypts_server_wide}: a `none` trial after an encrypted one shares that cost unless you "
            "restart the instance.")


def run_script(target: Target, plan: KitPlan, trials: list[KitTrial]) -> str:
    """The kit's run.sh: every round, every trial's scripts, logs in the layout the import reads."""
    if target.tool == "sqlcmd":
        need = ': "${DATA_DIR:?export DATA_DIR: the CSV directory on the server, see README.md}"'
        invoke = 'eval "$CLIENT" -i "$script" > "$log" 2>&1'
    elif target.tool == "sqlplus":
        need = (': "${TDEBENCH_DATAFILE:?export TDEBENCH_DATAFILE, see README.md}"\n'
                ': "${TDEBENCH_CSV_DIR:?export TDEBENCH_CSV_DIR, see README.md}"')
        invoke = ("{ printf \"DEFINE TDEBENCH_DATAFILE = '%s'\\nDEFINE TDEBENCH_CSV_DIR = '%s'\\n\" "
                  "\"$TDEBENCH_DATAFILE\" \"$TDEBENCH_CSV_DIR\"; cat \"$script\"; } | eval \"$CLIENT\" > \"$log\" 2>&1")
    else:
        need = ""
        invoke = 'eval "$CLIENT" -vvv --unbuffered --local-infile=1 $force < "$script" > "$log" 2>&1'
    lines = [f"    run_trial {t.directory} {' '.join(s.file.rsplit('/', 1)[1] for s in t.scripts)}" for t in trials]
    return f"""#!/usr/bin/env bash
# Runs this kit with {target.tool}: ROUNDS rounds (the plan's {plan.repetitions}) of every trial, logs into logs/.
# Written by `tdebench script`; see README.md. CLIENT is the client command line, without a password.
set -euo pipefail
cd "$(dirname "$0")"
: "${{CLIENT:?set CLIENT to the {target.tool} command line, see README.md}}"
{need}
ROUNDS="${{ROUNDS:-{plan.repetitions}}}"

run() {{  # run SCRIPT stop|go-on: one script into its log; a script that stops at an error fails run.sh
    local script="$1" log force=""
    log="$logs/$(basename "${{script%.sql}}").log"
    if [ "$2" = go-on ]; then force=--force; fi
    echo "$script -> $log" >&2
    if [ "$2" = go-on ]; then {invoke} || true; else {invoke}; fi
}}

throughput() {{  # throughput DIR PASS: the pass's streams at once, their wall-clock time into a .wall file
    local start end pids=()
    start=$(date +%s.%N)
    for script in "$1"/06-throughput-"$2"-s*.sql; do run "$script" go-on & pids+=($!); done
    for pid in "${{pids[@]}}"; do wait "$pid" || true; done
    end=$(date +%s.%N)
    echo "$start $end" | awk '{{printf "%.6f\\n", $2 - $1}}' > "$logs/06-throughput-$2.wall"
}}

run_trial() {{  # run_trial DIR SCRIPT...
    local dir="$1"; shift
    logs="{'logs'}/$dir/r$round"; mkdir -p "$logs"
    local done_passes=" "
    for name in "$@"; do
        case "$name" in
            05-power.sql) run "$dir/$name" go-on ;;
            06-throughput-*)
                pass="${{name#06-throughput-}}"; pass="${{pass%-s*}}"
                case "$done_passes" in
                    *" $pass "*) ;;
                    *) throughput "$dir" "$pass"; done_passes="$done_passes$pass " ;;
                esac ;;
            07-teardown.sql)
                if [ -n "${{PAUSE_BEFORE_TEARDOWN:-}}" ]; then
                    read -r -p "$dir round $round: copy the data files for tdebench verify now, then press Enter " _
                fi
                run "$dir/$name" go-on ;;
            *) run "$dir/$name" stop ;;
        esac
    done
}}

for round in $(seq 1 "$ROUNDS"); do
{chr(10).join(lines)}
done
"""
