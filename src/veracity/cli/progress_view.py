"""Showing a `JobProgress` on standard error: a live line on a terminal, and plain lines
now and then when standard error is a file or a pipe (so the log of a long run shows
how it went), never one per event.

Example:
    >>> job = JobProgress("cot · scifact", total=30, unit="claims")
    >>> with ProgressView(job, console) as view, view.watching():
    ...     run(on_record=lambda rec: view.item_done(stats=run_stats_parts(stats)))
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Group
from rich.text import Text

from veracity.cli.progress import JobProgress
from veracity.core import context

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

    from veracity.core.trace import TraceEvent

PLAIN_EVERY_S = 15.0  # without a terminal: a line at least this often while the job runs
PLAIN_STAGE_GAP_S = 3.0  # ... and at a change of stage, once the last line is this old
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

Final = Literal["always", "if_started", "never"]
STAGE_UNITS = {"reading": "documents", "chunking": "documents", "embedding": "chunks"}


class ProgressView:
    """Shows `job` on `console` while the block runs.

    Args:
        job: what to show.
        console: where (standard error).
        enabled: False shows nothing (``--no-progress``).
        transient: on a terminal, clear the line at the end (a verdict follows).
        final: without a terminal, print the last state at the end: always, only when a
            line was printed before (a long check), or never.
        live: force the live (True) or plain (False) display; default: live on an
            interactive terminal.
        ticker: without a terminal, wake every second to print the periodic line (tests
            call `tick` themselves with a fake clock).
    """

    def __init__(
        self,
        job: JobProgress,
        console: Console,
        *,
        enabled: bool = True,
        transient: bool = False,
        final: Final = "always",
        live: bool | None = None,
        ticker: bool = True,
    ):
        self.job, self.console, self.enabled = job, console, enabled
        self.transient, self.final, self.ticker = transient, final, ticker
        self.live = console.is_interactive if live is None else live
        self.printed = 0
        self._last_text: list[str] = []
        self._last = job.clock()
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProgressView:
        if not self.enabled:
            return self
        if self.live:
            from rich.live import Live

            self._live = Live(
                console=self.console,
                get_renderable=self._render,
                refresh_per_second=4,
                transient=self.transient,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        elif self.ticker:
            self._thread = threading.Thread(target=self._tick_loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if not self.enabled:
            return
        if self._live is not None:
            self._live.stop()
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if exc_type is not None:  # the error says what happened
            return
        if self.final == "always" or (self.final == "if_started" and self.printed):
            self.print_now()

    @contextlib.contextmanager
    def watching(self) -> Iterator[ProgressView]:
        """Feed the trace events of every check run inside the block to the job."""
        if not self.enabled:
            yield self
            return
        with context.observe(self.event):
            yield self

    # ------------------------------------------------------------ what the job tells

    def event(self, event: TraceEvent) -> None:
        """One trace event (a `veracity.core.context.observe` callback; never raises)."""
        try:
            ctx = context.active()
            with self._lock:
                # a document's claim checks count as the document's (their outermost check)
                key = None if ctx is None else id(ctx.root())
                changed = self.job.trace.observe(event, key)
            self.tick(stage=changed and self.job.single_check)
        except Exception:  # a display fault must never stop a check
            return

    def item_done(self, **kwargs: Any) -> None:
        """One item finished (see `JobProgress.item_done`)."""
        with self._lock:
            self.job.item_done(**kwargs)
        self.tick()

    def advance(self, n: int = 1, **kwargs: Any) -> None:
        with self._lock:
            self.job.advance(n, **kwargs)
        self.tick()

    def set_stage(self, stage: str, total: int | None = None, unit: str | None = None) -> None:
        with self._lock:
            self.job.set_stage(stage, total, unit)
        self.tick(stage=True)

    def position(self, stage: str, done: int, total: int | None) -> None:
        """Where a staged job is: `done` of `total` items of `stage` (an index build's
        `BuildProgress`; a new stage starts its own count and pace)."""
        if stage != self.job.stage:
            self.set_stage(stage, total, STAGE_UNITS.get(stage, ""))
        with self._lock:
            self.job.done, self.job.total = done, total
        self.tick()

    # ----------------------------------------------------------------- showing it

    def tick(self, stage: bool = False) -> None:
        """Without a terminal, print a line when one is due: `PLAIN_EVERY_S` after the
        last, or at a change of stage once the last is `PLAIN_STAGE_GAP_S` old."""
        if not self.enabled or self.live:
            return
        gap = self.job.clock() - self._last
        if gap >= PLAIN_EVERY_S or (stage and gap >= PLAIN_STAGE_GAP_S):
            self.print_now()

    def print_now(self) -> None:
        """Print the progress as plain lines (no live display); lines identical to the
        last ones printed are not printed again (a check's end, then the closing line)."""
        with self._lock:
            now = self.job.clock()
            lines = self.job.lines(self.console.width, now=now)
            self._last = now
            text = [str(line) for line in lines]
            if text == self._last_text:
                return
            self._last_text = text
            self.printed += 1
            for line in lines:
                self.console.print(line, soft_wrap=True, highlight=False)

    def _render(self) -> Group:
        with self._lock:
            now = self.job.clock()
            lines = self.job.lines(max(self.console.width - 2, 20), bar=True, now=now)
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        return Group(Text(f"{frame} ", style="green") + lines[0], *lines[1:])

    def _tick_loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.tick()
            except Exception:  # a display fault must never stop the job
                return


def check_view(method: Any, console: Console, *, enabled: bool = True) -> ProgressView:
    """The view of one `veracity check`: its stage, calls, elapsed time (cleared when
    the verdict is printed on a terminal; a last line in a log when lines were printed)."""
    job = JobProgress(getattr(method, "name", "check"), single_check=True)
    return ProgressView(job, console, enabled=enabled, transient=True, final="if_started")
