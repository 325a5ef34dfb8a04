"""Whether a plot file shows a chart, not an empty frame: its bytes say little since plots are
256-colour PNGs, so the pixels are read (with Pillow, matplotlib's own reader of PNGs). Axes,
ticks and text are grey; bars, lines and markers are coloured."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

MIN_COLOURED = 0.005
"""The share of pixels that are coloured (not grey): an empty figure has none, the thinnest
chart of the examples (a few overhead bars) 1.6%."""
GREY_SPREAD = 16
"""A pixel is grey when its channels differ by less than this."""


def drawn(path: Path) -> bool:
    with Image.open(path) as image:
        pixels = image.convert("RGB")
        colours = pixels.getcolors(maxcolors=1 << 24) or []
        width, height = pixels.size
    coloured = sum(count for count, rgb in colours if max(rgb) - min(rgb) >= GREY_SPREAD)
    return coloured / (width * height) >= MIN_COLOURED
