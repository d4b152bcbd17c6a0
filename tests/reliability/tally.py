"""The reliability tables' counts: tried, clear error, crashed, silently wrong, hole."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Tally"]


@dataclass
class Tally:
    """Outcomes of a table of attempts: refused with a clear error, crashed (5xx, a
    traceback, a cut-off answer), silently wrong (accepted but mishandled) or a hole
    (an attack that went through)."""

    tried: int = 0
    clear: int = 0
    crashed: list[str] = field(default_factory=list)
    silent: list[str] = field(default_factory=list)
    holes: list[str] = field(default_factory=list)

    def line(self, area: str) -> str:
        return (
            f"{area}: tried {self.tried}, clear error {self.clear}, crashed "
            f"{len(self.crashed)}, silently wrong {len(self.silent)}, hole {len(self.holes)}"
        )

    def assert_clean(self) -> None:
        assert (self.crashed, self.silent, self.holes) == ([], [], []), self
