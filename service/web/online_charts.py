"""The charts of /admin/online, drawn on the server as SVG by matplotlib.

Each chart is its own SVG file (the pages' Content-Security-Policy allows no inline style, and
an ``<img>`` of this origin needs none), drawn from the latest online figures
(``recommender.online.snapshot``), so no front-end build or script is needed. matplotlib is
imported on the first chart only (the service starts without it), through its object API
(``Figure``, never pyplot's global state), and one chart is drawn at a time per process:
``rc_context`` changes matplotlib's process-wide settings.

- ``daily``: like rate@10 by day, one line per ranking variant (every surface);
- ``places``: like rate by place 1 to 20, one line per variant;
- ``calibration``: the probability shown against the score ``z`` for a few like counts (the
  calibration served now), and the reliability of the probabilities shown in the window
  (share liked against mean probability, per bin, with the diagonal) and its ECE.

Each has a title, axis labels, a legend, and says so when there is nothing to draw.
"""

from __future__ import annotations

import io
import math
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from recommender.ranking.calibration import Calibration

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

EMPTY = "no lists served in this window yet"
LIKE_COUNTS = (1, 5, 20, 100)  # the calibration's curves: readers with this many likes
Z_RANGE = (-2.0, 8.0)
SIZE = (7.5, 3.6)  # inches, at 100 dpi: 750 x 360 px
_drawing = threading.Lock()


def daily(figures: dict[str, Any]) -> bytes:
    """Like rate@10 by day per variant (every surface)."""
    by_variant: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for row in figures.get("days", []):
        if row["surface"] == "all" and row.get("like_rate@10") is not None:
            by_variant[row["variant"]].append((row["day"], float(row["like_rate@10"])))

    def draw(axes: Axes) -> bool:
        days = sorted({day for rows in by_variant.values() for day, _ in rows})
        for variant, rows in sorted(by_variant.items()):
            axes.plot([days.index(day) for day, _ in rows], [rate for _, rate in rows],
                      marker="o", label=variant)
        if days:
            step = max(1, len(days) // 8)
            axes.set_xticks(range(0, len(days), step), [d[5:] for d in days[::step]])
            axes.set_xlim(-0.5, len(days) - 0.5)
        return bool(days)

    return _chart(f"Like rate@10 by day ({_window(figures)})", "day (UTC)",
                  "likes / papers served at places 1-10", draw)


def places(figures: dict[str, Any]) -> bytes:
    """Like rate by place (1-20) per variant."""
    found: dict[str, list[float | None]] = figures.get("places", {})

    def draw(axes: Axes) -> bool:
        drawn = False
        for variant, rates in sorted(found.items()):
            points = [(place, rate) for place, rate in enumerate(rates, 1) if rate is not None]
            if points:
                axes.plot(*zip(*points, strict=True), marker="o", label=variant)
                drawn = True
        axes.set_xticks(range(1, 21, 2))
        axes.set_xlim(0.5, 20.5)
        return drawn

    return _chart(f"Like rate by place ({_window(figures)})", "place on the list",
                  "likes / papers served there", draw)


def calibration(figures: dict[str, Any], served: Calibration | None) -> bytes:
    """The probability curve served now beside the reliability of the probabilities shown."""
    import numpy as np
    from matplotlib.figure import Figure

    reliability = figures.get("calibration", {})
    with _drawing, _style():
        figure = Figure(figsize=(SIZE[0], SIZE[1] + 0.4), layout="constrained")
        curve, points = figure.subplots(1, 2)
        curve.set_title("Probability shown now, by score")
        curve.set_xlabel("score z (the reader's own units)")
        curve.set_ylabel("probability shown")
        if served is None:
            _say(curve, "no index yet: nothing is served")
        else:
            z = np.linspace(*Z_RANGE, 200)
            for likes in LIKE_COUNTS:
                curve.plot(z, served.probability(z, likes), label=f"{likes} likes")
            curve.axhline(served.base_rate, linestyle=":", color="grey",
                          label=f"no likes ({served.base_rate:.3f})")
            top = max(float(served.probability(np.asarray([Z_RANGE[1]]), 1)[0]),
                      served.base_rate)
            curve.set_ylim(0, min(1.0, max(0.2, top * 1.2)))
            curve.legend(fontsize="small", loc="upper left")
        ece = reliability.get("ece")
        points.set_title("Reliability of the probabilities shown"
                         + (f"\n(ECE {ece:.3f}, {_window(figures)})" if ece is not None else ""))
        points.set_xlabel("mean probability shown (bin)")
        points.set_ylabel("share liked")
        bins = reliability.get("bins", [])
        # Zoomed on the probabilities shown (they are mostly small), the diagonal across.
        edge = min(1.0, max([0.3] + [1.25 * max(b["probability"], b["liked"]) for b in bins]))
        points.set_xlim(0, edge)
        points.set_ylim(0, edge)
        points.plot([0, edge], [0, edge], linestyle="--", color="grey",
                    label="perfectly calibrated")
        if bins:
            sizes = np.asarray([b["items"] for b in bins], np.float64)
            points.scatter([b["probability"] for b in bins], [b["liked"] for b in bins],
                           s=20 + 180 * sizes / sizes.max(), color="C3", zorder=3,
                           label=f"served ({int(sizes.sum())} papers; area: papers in bin)")
        else:
            _say(points, EMPTY)
        points.legend(fontsize="small", loc="upper left")
        return _svg(figure)


def _chart(title: str, xlabel: str, ylabel: str, draw: Callable[[Axes], bool]) -> bytes:
    from matplotlib.figure import Figure

    with _drawing, _style():
        figure = Figure(figsize=SIZE, layout="constrained")
        axes = figure.subplots()
        axes.set_title(title)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
        if draw(axes):
            axes.legend(title="ranking variant", fontsize="small")
            axes.set_ylim(0, max(0.05, float(axes.dataLim.ymax) * 1.15))
        else:
            _say(axes, EMPTY)
        return _svg(figure)


def _say(axes: Axes, text: str) -> None:
    axes.text(0.5, 0.5, text, transform=axes.transAxes, ha="center", va="center",
              color="#555")


def _style() -> Any:
    import matplotlib

    # Text as text (smaller, selectable); ids the same for the same chart.
    return matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "paperrec",
                                  "font.size": 10, "axes.grid": True, "grid.alpha": 0.3})


def _svg(figure: Figure) -> bytes:
    out = io.BytesIO()
    figure.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()


def _window(figures: dict[str, Any]) -> str:
    days = figures.get("window_days")
    return f"last {days:g} days" if isinstance(days, int | float) and math.isfinite(days) \
        else "the window"


CHARTS = {  # name: the image's alternative text
    "daily": "Like rate at 10 by day, per ranking variant",
    "places": "Like rate by place on the list, per ranking variant",
    "calibration": "The probability shown against the score, and the reliability of the "
                   "probabilities shown",
}
