"""The report as a page to navigate: its table of contents, the verdicts per configuration, the
long tables folded in report.html, and plots only where they show something."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest


from fakes import DEMO, DEMO_PLAN, FAILED, MIB, Shape, write_fake_run  # noqa: E402

from tdebench.report import build  # noqa: E402
from tdebench.report.sections.document import anchors, slug  # noqa: E402
from tdebench.report.sections import FOLD_ABOVE  # noqa: E402
from tdebench.report.summaries.plots import overhead_plots, resource_plots, scaling_plots  # noqa: E402
from tdebench.report.data.records import CellKey, SummaryRecord, summary_records  # noqa: E402
from tdebench.report.summaries.tables import verdict_summary_table  # noqa: E402
from tdebench.stats import summarize  # noqa: E402
from tdebench.results import Sample, TrialKey  # noqa: E402
from tdebench.store import read_run  # noqa: E402

UNEXPECTED = TrialKey("sqlite", "aes-256-cbc", "tpch", 0.01, 4)  # its verdict turned to plaintext


def _turn_plaintext(run_dir: Path, trial: TrialKey) -> None:
    """Rewrite one trial's verdict in results.jsonl as if its scan had found the canaries."""
    results = run_dir / "results.jsonl"
    lines = []
    for line in results.read_text().splitlines(keepends=True):
        record = json.loads(line)
        if record.get("kind") == "verdict" and TrialKey(**record["trial"]) == trial:
            record.update(verdict="plaintext", first_hit="sqlite.db@4096 (utf-8)", detail="canaries found")
            line = json.dumps(record) + "\n"
        lines.append(line)
    results.write_text("".join(lines))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run the size of the demo plan, one of its 65 verdicts not as expected."""
    directory = tmp_path_factory.mktemp("demo")
    write_fake_run(directory, plan=DEMO_PLAN, placebo=True, memories=(None,), shape=DEMO)
    _turn_plaintext(directory, UNEXPECTED)
    build(directory)
    return directory


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _html_section(html: str, anchor: str) -> str:
    return html.split(f'<section id="{anchor}">', 1)[1].split("</section>", 1)[0]


def test_anchors_are_github_slugs_unique_and_never_reserved() -> None:
    assert slug("Against the raw cipher") == "against-the-raw-cipher"
    assert slug("Index rebuild (lineitem)") == "index-rebuild-lineitem" and slug("Per-query") == "per-query"
    assert anchors(["Findings", "Verdicts", "Verdicts", "Headline", "Contents", "?"]) == [
        "findings", "verdicts", "verdicts-1", "headline-1", "contents-1", "section"]


def test_contents_link_every_section_by_its_anchor(demo: Path) -> None:
    html = (demo / "report.html").read_text()
    nav = html.split('<nav class="toc" id="contents">', 1)[1].split("</nav>", 1)[0]
    links = re.findall(r'<a href="#([^"]+)">([^<]+)</a>', nav)
    sections = re.findall(r'<section id="([^"]+)">\n<h2>([^<]+)</h2>', html)
    assert links == sections and len(sections) == html.count("<h2>") == 13  # Failures: the unexpected verdict
    assert len({anchor for anchor, _ in sections}) == len(sections)
    # where the contents stand: after the headline block and the overview, before Findings
    body = html.split("<body>", 1)[1]
    assert body.index('class="headline"') < body.index("Plan “demo”") < body.index('class="toc"') < body.index("<h2>")
    markdown = (demo / "report.md").read_text()
    contents = next(line for line in markdown.splitlines() if line.startswith("**Contents:**"))
    md_links = re.findall(r"\[([^\]]+)\]\(#([^)]+)\)", contents)
    headings = re.findall(r"^## (.+)$", markdown, flags=re.MULTILINE)
    assert md_links == [(title, anchor) for anchor, title in sections]
    assert [title for title, _ in md_links] == headings and [slug(h) for h in headings] == [a for _, a in md_links]
    assert markdown.index("**In one minute:**") < markdown.index("Plan “demo”") < markdown.index("**Contents:**")
    assert markdown.index("**Contents:**") < markdown.index("## Findings")


def test_verdicts_one_row_per_configuration_the_unexpected_one_marked(demo: Path) -> None:
    markdown = (demo / "report.md").read_text()
    verdicts = _section(markdown, "Verdicts")
    rows = [line for line in verdicts.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 4 + 9  # duckdb: none, 2 encryptions, placebo; sqlite: none, 7, placebo
    assert "| duckdb | none | plaintext | 5/5 plaintext | yes |" in rows
    assert "| sqlite | placebo | plaintext | 5/5 plaintext | yes |" in rows
    assert "| sqlite | aes-256-cbc | encrypted | 4/5 encrypted, 1 plaintext | NO: 1 of 5 |" in rows
    assert "| first canary hit |" not in verdicts and "verdicts.csv" in verdicts  # per trial: the CSV only
    html = _html_section((demo / "report.html").read_text(), "verdicts")
    alarmed = re.findall(r'<tr class="alarm">(.*?)</tr>', html)
    assert len(alarmed) == 2  # the configuration's row, and the trial's in the folded table
    assert "4/5 encrypted, 1 plaintext" in alarmed[0] and "NO: 1 of 5" in alarmed[0]
    assert UNEXPECTED.id in alarmed[1] and "sqlite.db@4096" in alarmed[1]
    assert html.index(alarmed[0]) < html.index("<details>")  # the summary row is not folded
    assert "<summary>Each trial&#39;s verdict (65, 1 NOT as expected)" in html
    # verdicts.csv keeps one row per trial, in its own shape
    header, *lines = (demo / "verdicts.csv").read_text().splitlines()
    assert header.startswith("engine,encryption,workload,scale,repetition,verdict,") and len(lines) == 65


def test_verdict_counts_name_trials_without_a_verdict(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    rows = {(row["engine"], row["encryption"]): row for row in verdict_summary_table(read_run(tmp_path)).rows}
    assert rows[(FAILED.engine, FAILED.encryption)]["verdicts"] == "2/2 encrypted, 1 trial without a verdict"
    assert rows[(FAILED.engine, FAILED.encryption)]["as_expected"] == "yes"  # a failure, not a wrong verdict
    assert rows[("duckdb", "none")]["verdicts"] == "3/3 plaintext"


def test_long_reference_tables_fold_in_html_and_stay_whole_in_markdown(demo: Path) -> None:
    html = (demo / "report.html").read_text()
    load = _html_section(html, "machine-load")
    assert load.index("<details><summary>65 trials, 13 busy (others above 10% of one core); the busiest: ") \
        < load.index("<table>")
    assert load.count('<tr class="alarm">') == 13  # the busy trials
    environment = _html_section(html, "environment")
    assert "<details><summary>32 settings" in environment
    noisy = _html_section(html, "noisy-figures")
    assert ("<details>" in noisy) == (noisy.count("<tr") - 1 > FOLD_ABOVE)
    overhead = _html_section(html, "overhead")
    assert "<details>" not in overhead  # the results are never folded
    markdown = (demo / "report.md").read_text()
    assert len([line for line in _section(markdown, "Machine load").splitlines() if "/r" in line]) == 65


def test_a_resource_series_with_fewer_than_two_samples_draws_no_plot() -> None:
    def samples(encryption: str, count: int, repetition: int = 1) -> list[Sample]:
        trial = TrialKey("duckdb", encryption, "tpch", 0.01, repetition)
        return [Sample(trial, float(t), 50.0, 100 * MIB, 1.0, 0.0, 0.0, 5.0) for t in range(1, count + 1)]

    assert resource_plots(samples("none", 1) + samples("aes-256-gcm", 1)) == []
    # a repetition with a single reading gives way to the next one that has a line to draw
    assert len(resource_plots(samples("none", 1) + samples("none", 3, repetition=2))) == 1
    assert len(resource_plots(samples("none", 1) + samples("aes-256-gcm", 2))) == 1


def test_an_overhead_plot_compares_two_encryptions_or_is_not_drawn(tmp_path: Path) -> None:
    one = Shape(settings={"duckdb": {"none": (1.0, 10.0), "aes-256-gcm": (1.03, 10.5)}}, placed=False)
    write_fake_run(tmp_path / "one", shape=one)
    assert overhead_plots(summary_records(read_run(tmp_path / "one"))) == []
    write_fake_run(tmp_path / "placebo", shape=one, placebo=True)  # against the noise floor: a comparison
    assert len(overhead_plots(summary_records(read_run(tmp_path / "placebo")))) == 1


def test_a_scaling_panel_needs_two_table_sizes() -> None:
    def record(encryption: str, test: str, scale: float) -> SummaryRecord:
        cell = CellKey("duckdb", encryption, "crud", scale, test, "ops", "elapsed_s")
        return SummaryRecord(cell, "s", summarize([0.1, 0.11, 0.12]), None)

    single = [record(encryption, "insert", 1000.0) for encryption in ("none", "aes-256-gcm")]
    assert scaling_plots(single, "crud", ("insert",), "ops", "rows") == []
    assert len(scaling_plots(single + [record("none", "insert", 10000.0)], "crud", ("insert",), "ops", "rows")) == 1
