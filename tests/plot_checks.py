"""Render a figure and find text that overlaps or falls outside it.

Every ``Text`` the renderer actually draws is recorded (tick labels, axis labels, titles,
legend entries, colourbar labels, annotations and point labels alike) by wrapping
``Text.draw`` during one ``fig.canvas.draw()``; ticks outside the view and hidden texts are
never drawn, so they never count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matplotlib.text import Text


@dataclass
class Drawn:
    text: str
    box: Any  # a Bbox in display pixels
    artist: Any


def drawn_texts(fig: Any) -> list[Drawn]:
    """Every non-empty Text drawn when ``fig`` is rendered, with its window extent."""
    seen: list[Drawn] = []
    original = Text.draw

    def draw(self: Text, renderer: Any) -> None:
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            seen.append(Drawn(self.get_text(), self.get_window_extent(renderer), self))

    Text.draw = draw  # type: ignore[method-assign]
    try:
        fig.canvas.draw()
    finally:
        Text.draw = original  # type: ignore[method-assign]
    unique: dict[int, Drawn] = {}
    for d in seen:
        unique[id(d.artist)] = d  # a text drawn twice (blitting) counts once
    return list(unique.values())


def overlapping(fig: Any, pad: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose boxes overlap by more than ``pad`` pixels both ways."""
    texts = drawn_texts(fig)
    pairs = []
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            dx = min(a.box.x1, b.box.x1) - max(a.box.x0, b.box.x0)
            dy = min(a.box.y1, b.box.y1) - max(a.box.y0, b.box.y0)
            if dx > pad and dy > pad:
                pairs.append((a.text, b.text))
    return pairs


def outside(fig: Any, pad: float = 1.0) -> list[str]:
    """Drawn texts that stick out of the figure (cut off when saved)."""
    bounds = fig.bbox
    return [
        d.text
        for d in drawn_texts(fig)
        if d.box.x0 < bounds.x0 - pad
        or d.box.y0 < bounds.y0 - pad
        or d.box.x1 > bounds.x1 + pad
        or d.box.y1 > bounds.y1 + pad
    ]
