"""What a long job shows while it runs: stage, round or step, calls, elapsed time, ETA.

`CheckActivity` reads the trace events of one check (`veracity.core.trace`) into words — the
stage, the debate round, ReAct step or tree iteration with its limit, the last model
call's purpose, the count of calls and searches. `JobProgress` adds what a job of many
items knows (done of total, accuracy, tokens, cost) and estimates the time left. Both
build their line from `Part`s (`veracity.cli.progress_line`) fitted to the width: a line
stays whole at 80 columns. `veracity.cli.progress_view` shows it (a live line on a
terminal, a plain line now and then otherwise).

Estimates are given only where they are honest: a job of N items from the items done in
this session; a single check from the rounds, steps or iterations it has finished, to
its limit (``ETA ~``: a debate that stops early ends sooner).

Why not rich.progress: it draws bars of tasks with a completed and a total count, in
columns of fixed place, and cuts a line that does not fit with "…"; here the line is
words read from trace events (stage, round 2/5, the last call's purpose), its parts are
dropped by rank to fit 80 columns, and a check's ETA comes from loops to their limit, not
from a rate of completed units. Without a terminal, rich's live display prints only once,
at the end, where a log needs a line now and then (`veracity.cli.progress_view`). The
drawing itself is rich's (``rich.live.Live``, ``rich.text.Text``, ``rich.cells``).
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from veracity.cli.progress_line import (
    Clock,
    Part,
    as_text,
    clock_text,
    counted,
    fit,
    line_width,
    pace,
    searches_text,
    with_bar,
)
from veracity.core.events import (
    AgentStep,
    ClaimChecked,
    ClaimsFound,
    Fault,
    ModelCall,
    SearchDone,
    Stage,
    ToolCall,
    TraceEvent,
    TreeNode,
)

__all__ = [
    "CheckActivity", "Clock", "JobProgress", "Part", "TraceProgress", "as_text",
    "clock_text", "fit", "run_stats_parts",
]  # fmt: skip


@dataclass
class _Loop:
    """A counted loop inside a check: debate rounds, ReAct steps, tree iterations."""

    unit: str
    current: int
    last: int | None
    origin: int  # the first unit seen, and when it began
    origin_t: float
    current_t: float
    detail: str = ""
    finished: bool = False

    def text(self) -> str:
        of = f"/{self.last}" if self.last is not None else ""
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.unit} {self.current}{of}{detail}"

    def move(self, current: int, now: float, *, finished: bool = False) -> bool:
        """Go to unit `current`; whether that changed anything."""
        if current == self.current and finished == self.finished:
            return False
        self.current, self.current_t, self.finished = current, now, finished
        return True

    def eta(self, now: float) -> float | None:
        """Time left to the loop's limit at the mean pace of the units finished so far.

        A unit that runs past that pace has an unknown rest, never a negative one: the
        units not begun still count in full (a debate's later rounds run longer than its
        first, and counting the overrun off them showed "~0:06" two minutes before the
        end); in the last unit, once past the pace, no estimate is shown."""
        done = self.current - self.origin
        if self.last is None or self.finished or done < 1:
            return None
        per_unit = (self.current_t - self.origin_t) / done
        rest_of_current = per_unit - (now - self.current_t)
        if rest_of_current <= 0 and self.current >= self.last:
            return None
        left = per_unit * (self.last - self.current) + max(rest_of_current, 0.0)
        return left if left > 0 else None


@dataclass
class _Claims:
    """A document check's claims: found, to check (the check-worthy ones), checked."""

    found_n: int
    to_check: int
    started: float
    checked: int = 0
    others: int = 0  # not check-worthy: done without a check
    last_t: float = 0.0

    @classmethod
    def found(cls, event: ClaimsFound, now: float) -> _Claims:
        worthy = sum(1 for c in event.claims if c.get("category") in (None, "factual"))
        return cls(event.count, worthy if event.claims else event.count, now, last_t=now)

    def done(self, event: ClaimChecked, now: float) -> bool:
        if event.status == "not_checkworthy":
            self.others += 1
            return False
        self.checked, self.last_t = self.checked + 1, now
        return True

    def text(self) -> str:
        return f"claims {self.checked}/{self.to_check} checked"

    def eta(self, now: float) -> float | None:
        """Time left at the mean pace of the claims checked so far (they run several at
        once, so the pace is the document's, not one claim's)."""
        if self.checked < 1 or self.checked >= self.to_check:
            return None
        per_claim = (self.last_t - self.started) / self.checked
        left = per_claim * (self.to_check - self.checked) - (now - self.last_t)
        return left if left > 0 else None


def _short(tag: str) -> str:
    """A call's tag without round numbers and sample indexes (``scientist:rebuttal:2``
    → ``scientist:rebuttal``)."""
    keep = [p for p in tag.split(":") if not (p.isdigit() or p.startswith("sample"))]
    return ":".join(keep) or tag


@dataclass
class CheckActivity:
    """One check as a person would describe it, read from its trace events."""

    started: float
    method: str = ""
    stage: str = "starting"
    actor: str = ""  # the last model call's purpose, or the last tool used
    loop: _Loop | None = None
    calls: int = 0
    searches: int = 0
    failed_searches: int = 0
    finished: bool = False
    limits: dict[str, int] = field(default_factory=dict)
    document: _Claims | None = None  # a document check, once its claims are found

    def observe(self, event: TraceEvent, now: float) -> bool:
        """Take one event in; True when the stage, round or step changed (an event of a
        class it does not follow, `OtherEvent` included, changes nothing).

        In a document check, once its claims are found, the claims done out of those
        found are the stage; the claim checks' own stages, rounds and steps (several run
        at once) only name what is being done.
        """
        match event:
            case ClaimsFound():
                self.document = _Claims.found(event, now)
                self.loop, self.actor = None, ""
                return True
            case ClaimChecked() if self.document is not None:
                return self.document.done(event, now)
            case Stage() | AgentStep() | TreeNode() if self.document is not None:
                return False
            case ModelCall():
                self.calls += 1
                self.actor = str(event.purpose or _short(event.name))
            case SearchDone():
                self.searches += 1
                self.actor = f"searching {event.name}"
            case Fault(search_failed=True):
                self.failed_searches += 1
            case ToolCall():
                self.actor = event.tool
            case Stage():
                return self._stage(event, now)
            case AgentStep():
                return self._done("step", event.step, event.steps, now)
            case TreeNode(iteration=int(iteration)):
                return self._done("iteration", iteration, self.limits.get("iterations"), now)
        return False

    def _stage(self, event: Stage, now: float) -> bool:
        step = event.step
        if event.iterations is not None:
            self.limits["iterations"] = event.iterations
        if step == "start" and not self.method:
            self.method = event.name
            return False
        if step == "end" and event.name == self.method:
            self.finished, self.stage, self.loop, self.actor = True, "finished", None, ""
            return True
        if step == "round" and event.round is not None:
            return self._begun("debate round", event.round, event.rounds, now, event.data)
        name = event.name.removeprefix(f"{self.method}:") if self.method else event.name
        step = str(step).replace("_", " ") if step else "done"  # no step: a stage's end
        self.stage = step if name == self.method else f"{name} {step}"
        self.loop, self.actor = None, ""
        return True

    def _begun(self, unit: str, index: int, last: Any, now: float, data: dict) -> bool:
        """Unit `index` of a loop starts now (a debate round)."""
        loop = self.loop
        if loop is None or loop.unit != unit or index < loop.current:
            last = last if isinstance(last, int) else None
            self.loop = _Loop(unit, index, last, index, now, now)
            changed = True
        else:
            changed = loop.move(index, now)
        self.loop.detail = str(data.get("phase") or "")
        self.actor = "" if changed else self.actor
        return changed

    def _done(self, unit: str, index: int, last: Any, now: float) -> bool:
        """Unit `index` of a loop has just finished (a ReAct step, a tree iteration)."""
        last = last if isinstance(last, int) else None
        finished = last is not None and index >= last
        nxt = index if finished else index + 1
        loop = self.loop
        if loop is None or loop.unit != unit or nxt < loop.current:
            self.loop = _Loop(unit, nxt, last, nxt, now, now, finished=finished)
            changed = True
        else:
            changed = loop.move(nxt, now, finished=finished)
        self.actor = "" if changed else self.actor
        return changed

    def where(self) -> str:
        """The stage in words: ``debate round 2/5 (rebuttal)``, ``step 3/8``, ``keywords``,
        ``claims 3/7 checked``."""
        if self.document is not None and not self.finished:
            return self.document.text()
        return self.loop.text() if self.loop is not None else self.stage

    def eta(self, now: float) -> float | None:
        if self.document is not None:
            return self.document.eta(now)
        return self.loop.eta(now) if self.loop is not None else None

    def parts(self) -> list[Part]:
        """Stage, last actor, calls and searches, as line parts."""
        out = [Part(self.where(), 8, "cyan")]
        if self.actor and self.actor not in self.where():
            out.append(Part(self.actor, 1, "dim"))
        out.append(Part(counted(self.calls, "call"), 6))
        out.append(Part(searches_text(self.searches, self.failed_searches), 4))
        return out

    def eta_part(self, now: float) -> list[Part]:
        eta = self.eta(now)
        return [] if eta is None else [Part(f"ETA ~{clock_text(eta)}", 7)]


class TraceProgress:
    """The checks of a job (one, or many at once in an eval), each followed apart.

    Events are told apart by `key` (the check's context); the latest check to do
    something is the one shown.
    """

    def __init__(self, clock: Clock = time.monotonic):
        self.clock = clock
        self.calls = 0
        self.searches = 0
        self.failed_searches = 0
        self.checks: dict[Hashable, CheckActivity] = {}
        self.latest: Hashable | None = None

    def observe(self, event: TraceEvent, key: Hashable = None) -> bool:
        """Take one event in; True when its check's stage changed."""
        now = self.clock()
        activity = self.checks.get(key)
        if activity is None or activity.finished:
            activity = self.checks[key] = CheckActivity(started=now)
        self.calls += isinstance(event, ModelCall)
        self.searches += isinstance(event, SearchDone)
        self.failed_searches += isinstance(event, Fault) and bool(event.search_failed)
        changed = activity.observe(event, now)
        self.latest = key
        if activity.finished:  # keep the last finished check only, for its final words
            for gone in [k for k, a in self.checks.items() if a.finished and k != key]:
                del self.checks[gone]
        return changed

    def current(self) -> CheckActivity | None:
        """The check shown: the latest active one still running (else the latest)."""
        latest = self.checks.get(self.latest)
        if latest is not None and not latest.finished:
            return latest
        running = [a for a in self.checks.values() if not a.finished]
        return max(running, key=lambda a: a.started) if running else latest


def run_stats_parts(stats: Any, accuracy: bool = True) -> list[Part]:
    """The running figures of an eval or batch (`RunningStats`): accuracy, tokens, cost,
    and the count of each status other than ok (kept longest: failures must show)."""
    from veracity.core.types import cost_text

    out = []
    if accuracy:
        acc = stats.accuracy
        out.append(Part(f"acc {acc:.3f}" if acc is not None else "acc –", 5))
    out.append(Part(f"{stats.tokens:,} tok", 1))
    out.append(Part(cost_text(stats.cost_usd, stats.unpriced, currency="$"), 2))
    bad = {k: v for k, v in stats.by_status.items() if k != "ok" and v}
    out += [Part(f"{v} {k}", 6, "yellow") for k, v in sorted(bad.items())]
    return out


class JobProgress:
    """A long job: one check, or items done of a total (in stages, for an index build).

    Args:
        title: what runs (``radar``, ``cot · scifact``, ``index default``).
        total: items to do in this session's first stage (None: not known).
        unit: what an item is (``claims``, ``documents``), shown after the count.
        single_check: the job is one check, whose stage leads the line.
        clock: seconds from a monotonic clock (a fake one in tests).
        checks_after_s: a job of many items shows the running check's stage once that
            check has run this long (fast checks would only flicker).
    """

    def __init__(
        self,
        title: str,
        total: int | None = None,
        unit: str = "",
        *,
        single_check: bool = False,
        clock: Clock = time.monotonic,
        checks_after_s: float = 5.0,
    ):
        self.title, self.unit, self.single_check = title, unit, single_check
        self.clock, self.checks_after_s = clock, checks_after_s
        self.trace = TraceProgress(clock)
        self.started = clock()
        self.stage = ""
        self.stats: list[Part] = []
        self.record_calls = self.record_searches = 0
        self.set_stage("", total, unit)

    def set_stage(self, stage: str, total: int | None = None, unit: str | None = None) -> None:
        """Begin a stage of `total` items (counts and the pace start again)."""
        self.stage, self.total = stage, total
        self.unit = self.unit if unit is None else unit
        self.done = self.earlier = 0
        self.stage_started = self.clock()

    def advance(self, n: int = 1, *, earlier: bool = False, total: int | None = None) -> None:
        """`n` more items done; `earlier` ones were done in an earlier session."""
        self.done += n
        self.earlier += n if earlier else 0
        self.total = total if total is not None else self.total

    def item_done(
        self, *, stats: list[Part] | None = None, usage: Any = None, earlier: bool = False
    ) -> None:
        """One item finished (`usage`: its calls and searches, for engines whose checks
        run elsewhere and send no events)."""
        self.advance(earlier=earlier)
        if stats is not None:
            self.stats = stats
        if usage is not None and not earlier:
            self.record_calls += usage.llm_calls
            self.record_searches += usage.searches

    def eta(self, now: float) -> float | None:
        """Time left at this session's pace so far (None until one item is done)."""
        fresh = self.done - self.earlier
        if self.total is None or fresh < 1 or self.done >= self.total:
            return None
        return (now - self.stage_started) / fresh * (self.total - self.done)

    def _count_parts(self, now: float) -> list[Part]:
        unit = f" {self.unit}" if self.unit else ""
        if self.total is None:
            if not self.done:  # nothing counted (yet) in this stage
                return []
            out = [Part(f"{self.done:,}{unit}", 9)]
            fresh = self.done - self.earlier
            if fresh >= 1:
                each = (now - self.stage_started) / fresh
                out.append(Part(pace(each), 2))
            return out
        pct = 100 * self.done // self.total if self.total else 100
        return [Part(f"{self.done:,}/{self.total:,}{unit}", 9, bar=True), Part(f"{pct}%", 3)]

    def parts(self, now: float) -> list[Part]:
        """The main line: title, stage or count, elapsed, ETA, calls, running figures."""
        elapsed = Part(clock_text(now - self.started), 9)
        activity = self.trace.current()
        if self.single_check:
            head = [Part(activity.method if activity and activity.method else self.title, 10,
                         "bold")]  # fmt: skip
            body = activity.parts() if activity else [Part("starting", 8, "cyan")]
            return head + body + [elapsed] + (activity.eta_part(now) if activity else [])
        out = [Part(self.title, 10, "bold")]
        if self.stage:
            out.append(Part(self.stage, 9, "cyan"))
        out += [*self._count_parts(now), elapsed]
        eta = self.eta(now)
        if eta is not None:
            out.append(Part(f"ETA {clock_text(eta)}", 7))
        calls = max(self.trace.calls, self.record_calls)
        searches = max(self.trace.searches, self.record_searches)
        if calls:
            out.append(Part(counted(calls, "call"), 4))
        if searches or self.trace.failed_searches:
            out.append(Part(searches_text(searches, self.trace.failed_searches), 3))
        return out + self.stats

    def activity_parts(self, now: float) -> list[Part]:
        """The running check of a many-item job, once it has run `checks_after_s`."""
        activity = self.trace.current()
        if self.single_check or activity is None or activity.finished:
            return []
        if now - activity.started < self.checks_after_s:
            return []
        where, *rest = activity.parts()
        return [Part(f"now: {where.text}", where.keep, where.style), *rest,
                *activity.eta_part(now)]  # fmt: skip

    def lines(self, width: int, *, bar: bool = False, now: float | None = None) -> list[Text]:
        """The progress as text lines of at most `width` cells; `bar` draws a bar after
        the count when there is room."""
        now = self.clock() if now is None else now
        main = fit(self.parts(now), width)
        room = width - line_width(main) - 1
        if bar and self.total and room >= 10:
            main = with_bar(main, min(room, 30) - 1, self.done / self.total)
        out = [as_text(main, width)]
        activity = self.activity_parts(now)
        if activity:
            out.append(Text("  ") + as_text(activity, width - 2))
        return out
