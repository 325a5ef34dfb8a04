"""Render report.html of the fake run in headless Chromium: the report must really draw.

A missing browser is a failure, not a skip: a skipped test would let a broken report pass
unnoticed on the machine that is supposed to check it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
from matplotlib import image


from fakes import write_fake_run  # noqa: E402

from tdebench.report import build  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")


def screenshot(html: Path, png: Path, profile: Path) -> subprocess.CompletedProcess[str]:
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={png}",
               "--window-size=1280,4000", html.resolve().as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_report_renders_in_chromium(tmp_path: Path) -> None:
    assert CHROMIUM.is_file(), f"{CHROMIUM} not found: apt-get install -y chromium"
    run_dir = tmp_path / "run"
    write_fake_run(run_dir)
    build(run_dir)
    png = tmp_path / "report.png"

    result = screenshot(run_dir / "report.html", png, tmp_path / "profile")

    assert png.is_file(), f"no screenshot; chromium said:\n{result.stderr[-2000:]}"
    pixels = image.imread(png)
    assert pixels.shape[0] >= 4000 and pixels.shape[1] >= 1280
    colours = np.unique(pixels.reshape(-1, pixels.shape[-1])[::7], axis=0)
    assert len(colours) > 50, "screenshot is (nearly) blank"
