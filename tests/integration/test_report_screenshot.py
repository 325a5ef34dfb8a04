"""Render report.html in headless Chromium: the report must really draw, and a run the size of
the demo plan must give a page a reader can navigate at 1280 px.

A missing browser is a failure, not a skip: a skipped test would let a broken report pass
unnoticed on the machine that is supposed to check it.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image


from fakes import DEMO, DEMO_PLAN, write_fake_run  # noqa: E402

from tdebench.report import build  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
WIDTH = 1280
MAX_HEIGHT = 10000  # px: 8000 before the answer table (13 rows, ~1250 px) and each configuration's CPU view
FIRST_SCREEN = 800  # px: what a 1280 × 800 window shows before any scrolling
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

MEASURE = """<script>
window.addEventListener("load", () => {
  const root = document.documentElement;
  const overflowing = () => [...document.querySelectorAll(".scroll")]
    .filter(box => box.offsetParent !== null && box.scrollWidth > box.clientWidth + 1)
    .map(box => (box.closest("section") || {id: "(no section)"}).id);
  const h1 = document.querySelector("h1");
  const result = {
    width: root.scrollWidth, height: root.scrollHeight,
    after_h1: h1.nextElementSibling ? h1.nextElementSibling.className : "",
    picture: [...document.querySelectorAll("figure.headline-picture img")].map(img => {
      const box = img.getBoundingClientRect();
      return [box.top, box.bottom, img.naturalWidth];
    }),
    links: [...document.querySelectorAll("nav.toc a")].map(a => {
      const target = document.getElementById(a.getAttribute("href").slice(1));
      const heading = target && target.querySelector("h2");
      return [a.textContent, a.getAttribute("href"), heading ? heading.textContent : null];
    }),
    sections: [...document.querySelectorAll("h2")].map(h => h.parentElement.id),
    images: [...document.images].map(img => img.complete ? img.naturalWidth : 0),
    overflowing: overflowing(),
    folded: document.querySelectorAll("details").length,
  };
  document.querySelectorAll("details").forEach(fold => { fold.open = true; });
  result.open_width = root.scrollWidth;
  result.open_overflowing = overflowing();
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify(result);
  document.body.appendChild(out);
});
</script>"""


def chromium(profile: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def screenshot(html: Path, png: Path, profile: Path, height: int = 4000) -> subprocess.CompletedProcess[str]:
    return chromium(profile, f"--screenshot={png}", f"--window-size={WIDTH},{height}", html.resolve().as_uri())


def measure(report: Path, scratch: Path) -> dict:
    """The page as Chromium lays it out at WIDTH px: a copy of it with a script that measures it
    once loaded (the report itself has none) and writes the figures into the DOM, dumped."""
    page = scratch / "measured.html"
    page.write_text(report.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    result = chromium(scratch / "profile-measure", f"--window-size={WIDTH},900", "--virtual-time-budget=10000",
                      "--dump-dom", page.resolve().as_uri())
    found = re.search(r'<pre id="measured">(.*?)</pre>', result.stdout, flags=re.DOTALL)
    assert found, f"nothing measured; chromium said:\n{result.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def assert_drawn(png: Path, result: subprocess.CompletedProcess[str], height: int) -> None:
    assert png.is_file(), f"no screenshot; chromium said:\n{result.stderr[-2000:]}"
    pixels = image.imread(png)
    assert pixels.shape[0] >= height and pixels.shape[1] >= WIDTH
    colours = np.unique(pixels.reshape(-1, pixels.shape[-1])[::7], axis=0)
    assert len(colours) > 50, "screenshot is (nearly) blank"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run the size of the demo plan (13 configurations, 65 trials), built once for the
    tests that read its report."""
    run_dir = tmp_path_factory.mktemp("demo") / "run"
    write_fake_run(run_dir, plan=DEMO_PLAN, placebo=True, memories=(None,), shape=DEMO)
    build(run_dir)
    return run_dir


@pytest.fixture(scope="module")
def chromium_present() -> None:
    assert CHROMIUM.is_file(), f"{CHROMIUM} not found: apt-get install -y chromium"


def test_report_renders_in_chromium(tmp_path: Path, chromium_present: None) -> None:
    run_dir = tmp_path / "run"
    write_fake_run(run_dir)
    build(run_dir)
    png = tmp_path / "report.png"

    result = screenshot(run_dir / "report.html", png, tmp_path / "profile")

    assert_drawn(png, result, 4000)


def test_a_demo_sized_report_navigates_at_1280_px(tmp_path: Path, demo_run: Path, chromium_present: None) -> None:
    """The demo plan's size (13 configurations, 65 trials): no page-wide horizontal scroll, no
    table scrolling inside its box, folded or not; every contents link leads to its section;
    every plot loads; the headline picture first under the title, whole on the first screen
    (FIRST_SCREEN: 1280 × 800), then "In one minute"; under MAX_HEIGHT px. The
    screenshot of the whole page stays in tmp_path (report.png) to look at."""
    run_dir = demo_run

    page = measure(run_dir / "report.html", tmp_path)
    png = tmp_path / "report.png"
    result = screenshot(run_dir / "report.html", png, tmp_path / "profile", height=page["height"])

    assert_drawn(png, result, page["height"])
    assert page["width"] <= WIDTH and page["open_width"] <= WIDTH
    assert page["overflowing"] == [] and page["open_overflowing"] == []
    assert page["height"] < MAX_HEIGHT, f"the page is {page['height']} px tall"
    assert page["after_h1"] == "headline-picture"
    [(top, bottom, drawn)] = page["picture"]
    assert drawn > 0 and bottom <= FIRST_SCREEN, f"the headline picture spans {top:.0f}–{bottom:.0f} px"
    assert page["images"] and all(width > 0 for width in page["images"])
    assert len(page["links"]) == len(page["sections"]) >= 10
    for title, href, heading in page["links"]:
        assert heading == title, f"contents link {title} → {href} leads to {heading}"
    assert [href[1:] for _, href, _ in page["links"]] == page["sections"]  # every section, in order
    assert page["folded"] >= 3  # at least the verdicts by trial, the machine load and the environment


SORT_AND_FILTER = """<script>
window.addEventListener("load", () => {
  const table = [...document.querySelectorAll("div.scroll > table")]
    .find(t => [...t.tHead.rows[0].cells].some(th => th.textContent === "overhead"));
  const column = [...table.tHead.rows[0].cells].findIndex(th => th.textContent === "overhead");
  const read = () => [...table.tBodies[0].rows].filter(r => !r.hidden).map(r => r.cells[column].textContent.trim());
  const result = {before: read()};
  table.tHead.rows[0].cells[column].click();
  result.up = read();
  table.tHead.rows[0].cells[column].click();
  result.down = read();
  const box = table.parentElement.previousElementSibling;
  result.box = box ? box.className : "";
  if (box && box.tagName === "INPUT") {
    box.value = "sqlite";
    box.dispatchEvent(new Event("input"));
    result.kept = [...table.tBodies[0].rows].filter(r => !r.hidden).map(r => r.cells[0].textContent.trim());
  }
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify(result);
  document.body.appendChild(out);
});
</script>"""


def test_tables_sort_by_a_click_and_filter_by_text(tmp_path: Path, demo_run: Path, chromium_present: None) -> None:
    """In Chromium, with no network: a click on the overhead table's "overhead" header orders
    its rows by value, a second click the other way; its filter box keeps
    only the rows holding the text typed."""
    page = tmp_path / "sorted.html"
    report = (demo_run / "report.html").read_text(encoding="utf-8")
    page.write_text(report.replace("</body>", SORT_AND_FILTER + "</body>"), encoding="utf-8")
    result = chromium(tmp_path / "profile", f"--window-size={WIDTH},900", "--virtual-time-budget=10000",
                      "--dump-dom", page.resolve().as_uri())
    found = re.search(r'<pre id="measured">(.*?)</pre>', result.stdout, flags=re.DOTALL)
    assert found, f"nothing measured; chromium said:\n{result.stderr[-2000:]}"
    sorted_rows = json.loads(html.unescape(found.group(1)))

    def values(cells: list[str]) -> list[float]:
        return [float(re.match(r"[-+]?\d+(\.\d+)?", c.replace("−", "-")).group(0)) for c in cells if c != "–"]

    up, down = values(sorted_rows["up"]), values(sorted_rows["down"])
    assert len(up) >= 10 and up == sorted(up) and down == sorted(down, reverse=True)
    assert sorted(sorted_rows["before"]) == sorted(sorted_rows["up"])  # the same rows, reordered
    assert sorted_rows["box"] == "filter"
    assert sorted_rows["kept"] and all(engine == "sqlite" for engine in sorted_rows["kept"])
