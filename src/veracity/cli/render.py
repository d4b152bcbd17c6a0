"""Rich rendering of verdicts for the terminal."""

from __future__ import annotations

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from veracity.core.events import Note, TreeNode
from veracity.core.textio import plural
from veracity.core.types import TraceEvent, Verdict, cost_text
from veracity.documents.report import support_of

_COLOURS = {1.0: "green", 0.0: "red"}


def _label_style(verdict: Verdict) -> str:
    if verdict.error:
        return "bold white on red"
    if verdict.label is None:
        return "bold yellow"
    # the label decides, by the one rule every view uses (a FALSE label at 44% is red,
    # a TRUE one at 59% green); the score only for a label its space does not have
    side = support_of(verdict)
    if side is None:
        return "bold"
    return {"supported": "bold green", "refuted": "bold red"}.get(side, "bold yellow")


def usage_line(verdict: Verdict) -> str:
    u = verdict.usage
    parts = [
        plural(u.llm_calls, "LLM call")
        + (f" ({u.cached_llm_calls} cached)" if u.cached_llm_calls else ""),
        f"{u.prompt_tokens:,}+{u.completion_tokens:,} tokens"
        + (f" ({u.cached_prompt_tokens:,} prompt tokens reused)" if u.cached_prompt_tokens else ""),
        plural(u.searches, "search")
        + (f" ({u.failed_searches} failed)" if u.failed_searches else ""),
        f"{u.wall_time_s:.1f}s",
    ]
    if u.cost_usd or u.unpriced_llm_calls:
        parts.append(cost_text(u.cost_usd, u.unpriced_llm_calls, currency="$"))
    return " · ".join(parts)


def cut_notes(verdict: Verdict) -> list[str]:
    """What the method left out of the input (``input_cut`` trace notes), once each, with
    the setting that raises the limit."""
    lines: dict[str, None] = {}
    for event in verdict.trace.events:
        if isinstance(event, Note) and event.name == "input_limits":  # the run's input limits
            for c in event.data.get("cuts", []):
                lines[
                    f"note: the input's {c.get('field')} was cut to {c.get('kept'):,} of "
                    f"{c.get('total'):,} {c.get('unit', 'characters')} (the run's input limits, "
                    "sized to the model's context: a model with a larger context sees more)"
                ] = None
        if not isinstance(event, Note) or event.name != "input_cut":
            continue
        d = event.data
        line = (
            f"note: the method read the first {d.get('kept'):,} of {d.get('total'):,} "
            f"{d.get('unit')} of {d.get('what')}"
        )
        if d.get("setting"):
            line += f" (raise it with --set {d['setting']}=N; a longer input needs a model "
            line += "with a larger context: --config with `llm: {n_ctx: N}`, or --model)"
        lines[line] = None
    return list(lines)


def verdict_panel(verdict: Verdict, input_text: str) -> Panel:
    head = Text()
    if verdict.error:
        head.append("ERROR", style=_label_style(verdict))
        head.append(f"  {verdict.error}")
    elif verdict.label is None:
        head.append("ABSTAINED", style=_label_style(verdict))
        head.append(f"  {verdict.abstain_reason}")
    else:
        head.append(f" {verdict.label} ", style=_label_style(verdict))
        if verdict.score is not None:
            head.append(f"  veracity {verdict.score:.2f}")
        if verdict.confidence is not None:
            head.append(f"  confidence {verdict.confidence:.2f}")
    parts: list = [
        Text(input_text if len(input_text) < 400 else input_text[:400] + "…", style="italic"),
        head,
    ]
    if verdict.probabilities:
        probs = "  ".join(f"{k} {v:.2f}" for k, v in verdict.probabilities.items())
        parts.append(Text(f"probabilities: {probs}", style="dim"))
    if verdict.probability_note:  # a tie, an overruled answer, or no readable numbers
        parts.append(Text(f"note: {verdict.probability_note}", style="yellow"))
    if verdict.rationale:
        parts.append(Text(verdict.rationale))
    if verdict.evidence:
        table = Table("#", "stance", "source", "quote", box=None, show_edge=False)
        for i, ev in enumerate(verdict.evidence, 1):
            mark = {True: " ✓", False: " ✗ unverified", None: ""}[ev.quote_verified]
            where = ev.document.url or ev.document.id
            quote = (ev.quote or ev.document.text)[:240]
            stance = Text(ev.stance.value)
            if ev.note:
                stance.append(f"\n{ev.note}", style="dim")
            head = Text(ev.document.title).append(f"\n{where}", style="dim")
            table.add_row(str(i), stance, head, Text(quote + mark))  # data: never markup
        parts.append(table)
    parts += [Text(line, style="yellow") for line in cut_notes(verdict)]
    parts.append(Text(usage_line(verdict), style="dim"))
    title = Text(f"veracity · {verdict.method} · {verdict.label_space}")
    return Panel(Group(*parts), title=title, expand=True)


_STATUS_STYLE = {"pruned": "dim strike", "unvisited": "dim", "pending": "dim", "failed": "red"}


def latest_tree_nodes(events: list[TraceEvent]) -> dict[str, dict]:
    """The last ``tree_node`` event of each node (the tree as it ended), in first-seen order."""
    nodes: dict[str, dict] = {}
    for event in events:
        if isinstance(event, TreeNode):
            nodes[event.data["node_id"]] = event.data
    return nodes


def _node_label(data: dict) -> Text:
    text = Text()
    v, r = data.get("veracity"), data.get("reliability")
    if v is not None and r is not None:
        style = "green" if v > 0.6 else "red" if v < 0.4 else "yellow"
        text.append(f"v {v:.2f} r {r:.2f} ", style=f"bold {style}")
    status = data.get("status") or ""
    text.append(f"[{status}] ", style=_STATUS_STYLE.get(status, "cyan"))
    if data.get("dimension"):
        text.append(f"{data['dimension']}: ", style="italic")
    claim = data.get("claim") or ""
    text.append(claim if len(claim) < 160 else claim[:160] + "…")
    flags = [name for name in ("expand", "decisive") if data.get(name)]
    extra = [f"{data['n_evidence']} evidence"] if data.get("n_evidence") else []
    if data.get("pruned_by"):
        extra.append(f"pruned by {data['pruned_by']}")
    if flags or extra:
        text.append(f"  ({', '.join(flags + extra)})", style="dim")
    return text


def tree_view(verdict: Verdict) -> Tree | None:
    """The argument tree of a verdict whose trace has ``tree_node`` events (ToE), as a rich
    Tree; None when there are none."""
    nodes = latest_tree_nodes(verdict.trace.events)
    if not nodes:
        return None
    iterations = max((d.get("iteration") or 0) for d in nodes.values())
    top = Tree(Text(f"argument tree after {iterations} iteration(s)", style="bold"))
    views: dict[str, Tree] = {}
    for node_id, data in nodes.items():
        parent = views.get(data.get("parent_id") or "", top)
        views[node_id] = parent.add(_node_label(data))
    return top
