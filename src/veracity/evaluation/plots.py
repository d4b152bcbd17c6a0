"""Report figures as PNG bytes, drawn with matplotlib's Agg canvas.

The figures are drawn on `matplotlib.figure.Figure` objects with an Agg canvas directly,
so no pyplot state or global backend is touched (safe inside servers and notebooks).
"""

from __future__ import annotations

import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from veracity.evaluation.metrics import Calibration


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def confusion_png(confusion: dict[str, dict[str, int]], title: str = "") -> bytes:
    """A heat map of the confusion matrix: gold labels in rows, predictions in columns."""
    rows = list(confusion)
    cols = list(next(iter(confusion.values())).keys()) if rows else []
    values = [[confusion[r][c] for c in cols] for r in rows]
    width = max(3.5, 1.0 + 0.9 * len(cols))
    fig = Figure(figsize=(width, max(2.8, 0.8 + 0.7 * len(rows))))
    ax = fig.add_subplot()
    image = ax.imshow(values or [[0]], cmap="Blues", aspect="auto")
    peak = max((v for row in values for v in row), default=0)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            colour = "white" if peak and v > peak / 2 else "black"
            ax.text(j, i, str(v), ha="center", va="center", color=colour)
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    if title:
        ax.set_title(title)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return _png(fig)


def reliability_png(cal: Calibration, title: str = "", target: str = "gold veracity") -> bytes:
    """A reliability diagram: mean predicted value vs mean observed value per bin."""
    fig = Figure(figsize=(4.6, 4.2))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfect")
    used = [b for b in cal.bins if b.count]
    width = (cal.bins[0].upper - cal.bins[0].lower) if cal.bins else 0.1
    ax.bar(
        [b.lower for b in used],
        [b.mean_target for b in used],
        width=width,
        align="edge",
        edgecolor="black",
        alpha=0.6,
        label=f"mean {target}",
    )
    ax.plot(
        [b.mean_score for b in used],
        [b.mean_target for b in used],
        marker="o",
        color="tab:red",
        label="bin means",
    )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted")
    ax.set_ylabel(target)
    ax.set_title(title or f"ECE {cal.ece:.3f} (n={cal.n})")
    ax.legend(loc="upper left", fontsize="small")
    return _png(fig)


def grid_heatmap_png(
    rows: list[float],
    cols: list[float],
    values: list[list[float]],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    mark: tuple[float, float] | None = None,
) -> bytes:
    """A heat map of `values[row][col]` over two numeric axes (e.g. a threshold grid),
    with an optional marked cell (the chosen pair)."""
    fig = Figure(figsize=(max(4.5, 0.22 * len(cols) + 2), max(4.0, 0.16 * len(rows) + 1.5)))
    ax = fig.add_subplot()
    image = ax.imshow(values or [[0.0]], cmap="viridis", aspect="auto", origin="lower")
    step_x = max(1, len(cols) // 10)
    step_y = max(1, len(rows) // 10)
    ax.set_xticks(range(0, len(cols), step_x), [f"{c:g}" for c in cols[::step_x]])
    ax.set_yticks(range(0, len(rows), step_y), [f"{r:+g}" for r in rows[::step_y]])
    if mark is not None and mark[0] in rows and mark[1] in cols:
        ax.plot(cols.index(mark[1]), rows.index(mark[0]), marker="*", color="red", markersize=12)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return _png(fig)


def action_heatmap_png(shares: dict[str, dict[str, float]], title: str = "") -> bytes:
    """A heat map of how often each action was taken per category (rows sum to 100 %)."""
    rows = list(shares)
    cols = sorted({a for row in shares.values() for a in row})
    values = [[shares[r].get(c, 0.0) * 100 for c in cols] for r in rows]
    fig = Figure(figsize=(max(4.0, 1.0 + 0.9 * len(cols)), max(2.6, 0.8 + 0.55 * len(rows))))
    ax = fig.add_subplot()
    image = ax.imshow(values or [[0.0]], cmap="YlOrRd", aspect="auto", vmin=0)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize="small")
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("action")
    ax.set_ylabel("claim category")
    ax.set_title(title or "share of actions per category (%)")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return _png(fig)
