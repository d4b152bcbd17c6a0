"""MERMAID's part of the command line: the ``--memory`` flag of ``veracity check`` and
``veracity eval``.

A front end, added through the ``veracity.run_options`` entry point ``memory`` (see
`veracity.cli.plugins`); nothing imports it. A flag on the commands users
already run, rather than a command of its own, because it switches one setting of one run
(``method_config.memory.mode``), like ``--set memory.mode=off`` but keeping a memory
given as text in a run file.
"""

from __future__ import annotations

from typing import Any

from veracity.cli.plugins import RunOption
from veracity.core.errors import ConfigError

MEMORY_MODES = ("on", "off", "read-only")


def with_memory_mode(cfg: Any, mode: str | None) -> Any:
    """`cfg` with MERMAID's evidence memory switched to `mode` (``--memory``), keeping
    the config's other memory options.

    Raises:
        ConfigError: an unknown mode.
    """
    if mode is None:
        return cfg
    if mode not in MEMORY_MODES:
        raise ConfigError(f"--memory must be one of {', '.join(MEMORY_MODES)}, not {mode!r}")
    current = cfg.method_config.get("memory") or {}
    if isinstance(current, str):
        current = {"mode": current}
    return cfg.with_overrides({"method_config": {"memory": {**current, "mode": mode}}})


MEMORY_OPTION = RunOption(
    flag="--memory",
    help="evidence memory of methods that keep one (mermaid): on, off, read-only",
    apply=with_memory_mode,
    choices=MEMORY_MODES,
)
