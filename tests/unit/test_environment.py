import json

from tdebench.measure.environment import (CRYPTO_FLAGS, cpu_flags, cpu_governor, cpu_model, cpu_text, cpu_turbo,
                                        snapshot, virtualization)

X86 = """processor\t: 0
model name\t: Example CPU @ 3.00GHz
flags\t\t: fpu sse2 aes pclmulqdq avx2 sha_ni
"""
ARM = """processor\t: 0
Features\t: fp asimd aes pmull sha2
"""


def test_cpu_flags_from_x86_cpuinfo():
    flags = cpu_flags(X86)
    assert list(flags) == list(CRYPTO_FLAGS)
    assert flags == {"aes": True, "vaes": False, "pclmulqdq": True, "vpclmulqdq": False,
                     "sha_ni": True, "avx2": True, "avx512f": False}


def test_cpu_flags_from_arm_cpuinfo_and_model_fallback():
    assert cpu_flags(ARM)["aes"] is True
    assert cpu_model(X86) == "Example CPU @ 3.00GHz"
    assert cpu_model(ARM)  # falls back to platform.processor() or "unknown"


def test_cpu_flags_of_this_machine_are_booleans():
    assert set(cpu_flags().values()) <= {True, False}


def test_snapshot_has_every_key_and_is_json(tmp_path):
    env = snapshot({"duckdb": "v1.5.5"}, tmp_path)
    for key in ("hostname", "timestamp_utc", "cpu_model", "cpu_flags", "logical_cores", "physical_cores",
                "memory_bytes", "kernel", "os", "python", "packages", "engines", "filesystem"):
        assert key in env, key
    assert env["engines"] == {"duckdb": "v1.5.5"}
    assert env["packages"]["numpy"] and env["packages"]["cryptography"]
    for name in ("duckdb", "apsw-sqlite3mc", "sqlglot", "scipy"):
        assert name in env["packages"]
    assert env["memory_bytes"] > 0 and env["logical_cores"] >= 1
    assert env["timestamp_utc"].endswith("+00:00")
    assert env["filesystem"]
    assert json.loads(json.dumps(env)) == env


def test_snapshot_without_directory():
    assert snapshot({})["filesystem"] is None


def _cpu_root(tmp_path, governors=(), no_turbo=None, boost=None):
    for index, governor in enumerate(governors):
        cpufreq = tmp_path / f"cpu{index}" / "cpufreq"
        cpufreq.mkdir(parents=True)
        (cpufreq / "scaling_governor").write_text(governor + "\n")
    if no_turbo is not None:
        (tmp_path / "intel_pstate").mkdir(parents=True)
        (tmp_path / "intel_pstate" / "no_turbo").write_text(no_turbo)
    if boost is not None:
        (tmp_path / "cpufreq").mkdir(parents=True)
        (tmp_path / "cpufreq" / "boost").write_text(boost)
    return tmp_path


def test_governor_from_every_core_and_unknown_without_cpufreq(tmp_path):
    assert cpu_governor(_cpu_root(tmp_path / "a", ["performance", "performance"])) == "performance"
    assert cpu_governor(_cpu_root(tmp_path / "b", ["powersave", "performance"])) == "performance, powersave"
    (tmp_path / "c").mkdir()
    assert cpu_governor(tmp_path / "c") == "unknown"


def test_turbo_from_intel_pstate_or_cpufreq_boost(tmp_path):
    assert cpu_turbo(_cpu_root(tmp_path / "a", no_turbo="1\n")) == "off"
    assert cpu_turbo(_cpu_root(tmp_path / "b", no_turbo="0\n", boost="0")) == "on"  # intel_pstate first
    assert cpu_turbo(_cpu_root(tmp_path / "c", boost="1\n")) == "on"
    assert cpu_turbo(_cpu_root(tmp_path / "d", boost="0\n")) == "off"
    (tmp_path / "e").mkdir()
    assert cpu_turbo(tmp_path / "e") == "unknown"


def test_virtualization_from_flags_markers_and_cgroup(tmp_path):
    marker = tmp_path / ".dockerenv"
    cgroup = tmp_path / "cgroup"
    cgroup.write_text("0::/\n")
    vm = X86.replace("fpu", "fpu hypervisor")
    assert virtualization(X86, {marker: "docker"}, cgroup) == "none found"
    assert virtualization(vm, {marker: "docker"}, cgroup) == "virtual machine"
    marker.write_text("")
    assert virtualization(vm, {marker: "docker"}, cgroup) == "virtual machine, container (docker)"
    cgroup.write_text("0::/kubepods/burstable/pod1\n")
    assert virtualization(X86, {}, cgroup) == "container (kubepods)"
    assert virtualization("processor\t: 0\n", {}, tmp_path / "absent") == "unknown"


def test_snapshot_records_the_machine_state_never_none(tmp_path):
    env = snapshot({}, tmp_path)
    for key in ("cpu_governor", "cpu_turbo", "load_average", "virtualization"):
        assert env[key] is not None and env[key] != "None", key
    assert env["load_average"] == "unknown" or len(env["load_average"]) == 3


def test_cpu_text_names_the_model_and_the_crypto_instructions_it_has_and_lacks():
    recorded = {"cpu_model": cpu_model(X86), "cpu_flags": cpu_flags(X86)}
    assert cpu_text(recorded) == ("Example CPU @ 3.00GHz with aes, pclmulqdq, sha_ni, avx2, without vaes, vpclmulqdq, "
                                  "avx512f")
    other = {"cpu_model": "Other CPU", "cpu_flags": {flag: True for flag in CRYPTO_FLAGS}}
    assert cpu_text({"hosts": {"node1": recorded, "node2": recorded, "node3": other}}) == (
        f"{cpu_text(recorded)} / Other CPU with {', '.join(CRYPTO_FLAGS)}")  # a cluster's kinds of host
    assert cpu_text({"cpu": {"model": "an older run's key"}}) == "CPU not recorded"
