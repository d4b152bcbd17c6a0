"""Commands and run options that installed packages add to ``veracity``.

Two entry-point groups extend the command line; the built-in methods use them exactly as
an outside package would (see pyproject.toml):

``veracity.commands``
    One entry per command. The name is the command (``advfact``: ``veracity advfact``)
    or a verb and a command (``calibrate.radar``: ``veracity calibrate radar``; the verb
    group is made for it). The value is a `typer.Typer` (a group of commands) or a
    function declared with typer options and arguments (its docstring is the help).

``veracity.run_options``
    One `RunOption` per entry: a flag of ``veracity check`` and ``veracity eval`` that
    changes the resolved run config (MERMAID's ``--memory``). A flag is a long option
    (``--memory``; a bare ``memory`` is read as ``--memory``); each is its own parameter
    of the command, so one option's value never reaches another. An option whose `apply`
    fails is a one-line error naming the flag.

Entries load lazily: ``veracity check`` loads no command entry, ``veracity calibrate
--help`` only the ``calibrate.*`` ones; a commands module imports only typer and
`veracity.cli` at its top, so that ``--help`` stays fast. An entry that fails to load is
left out with a warning on standard error, and one whose name or flag is taken (a built-in
command, another package's entry) is refused with a warning; the rest of the command line
works either way.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

import typer

from veracity.cli.app import PLAIN, WrappingGroup, console, styled
from veracity.core.errors import ConfigError

if TYPE_CHECKING:
    import click

COMMANDS_GROUP = "veracity.commands"
RUN_OPTIONS_GROUP = "veracity.run_options"
RUN_COMMANDS = ("check", "eval")
"""The built-in commands that resolve a run config and take the run options."""

VERB_HELP = {
    "calibrate": "Calibrate a method's thresholds on a development set.",
    "train": "Train a method's learned parts on a labelled dataset split.",
}
_META = "veracity.run_options"
_LONG_FLAG = re.compile(r"^(?:--)?([A-Za-z0-9][A-Za-z0-9-]*)$")


@dataclass(frozen=True)
class RunOption:
    """A flag that a method package adds to ``veracity check`` and ``veracity eval``.

    Attributes:
        flag: the option as typed, e.g. ``--memory`` (a bare ``memory`` means the same).
        help: its help line.
        apply: ``apply(config, value)`` returns the resolved run config with the value
            applied (raising `veracity.core.errors.ConfigError` for a bad one); called
            only when the flag is given.
        choices: the accepted values, checked before the command runs (None: any text).
    """

    flag: str
    help: str
    apply: Callable[[Any, str], Any]
    choices: tuple[str, ...] | None = None


def warn(message: str) -> None:
    """One warning line on standard error (text from a package is shown as it is)."""
    console.print(styled("[yellow]warning:[/] {}", message), soft_wrap=True)


def _origin(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    package = f"package {dist.name}" if dist is not None else "an installed package"
    return f"{package} ({ep.value})"


def as_command(name: str, obj: Any) -> click.Command:
    """The command for an entry's object, named `name`.

    Raises:
        TypeError: the object is neither a Typer nor a function.
    """
    if isinstance(obj, typer.Typer):
        command = typer.main.get_command(obj)
    elif callable(obj) and not isinstance(obj, type):
        single = typer.Typer(**PLAIN)  # type: ignore[arg-type]
        single.command(name)(obj)
        command = typer.main.get_command(single)
    else:
        raise TypeError(
            f"{type(obj).__name__} is not a command: give a typer.Typer or a function "
            "declared with typer options"
        )
    command.name = name
    return command


class _Lazy:
    """Entries by command name, each loaded on first use (a failure: None, warned once)."""

    def __init__(self) -> None:
        self.entries: dict[str, metadata.EntryPoint] = {}
        self._loaded: dict[str, click.Command | None] = {}

    def names(self) -> list[str]:
        return sorted(self.entries)

    def get(self, name: str) -> click.Command | None:
        if name not in self._loaded:
            ep = self.entries.get(name)
            self._loaded[name] = _load_command(name, ep) if ep is not None else None
        return self._loaded[name]


def _load_command(name: str, ep: metadata.EntryPoint) -> click.Command | None:
    try:
        return as_command(name, ep.load())
    except Exception as exc:  # any fault in a package's code leaves out its command only
        warn(
            f"the command {ep.name!r} from {_origin(ep)} could not be loaded and is left "
            f"out: {type(exc).__name__}: {exc}"
        )
        return None


class VerbGroup(WrappingGroup):
    """A verb (``calibrate``, ``train``) whose commands installed packages add."""

    def __init__(self, name: str, lazy: _Lazy) -> None:
        help_text = VERB_HELP.get(name, f"Commands that installed packages add under {name}.")
        super().__init__(name=name, help=help_text, no_args_is_help=True, rich_markup_mode=None)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return self.lazy.names()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self.lazy.get(cmd_name)


class PluginCommands:
    """The commands of the ``veracity.commands`` entries, beside the built-in `builtin`.

    Building the table refuses (with a warning) a name already taken, a name with more
    than one dot, and a verb that is also a command; nothing is imported until used.
    """

    def __init__(self, builtin: set[str]) -> None:
        self.top = _Lazy()
        self.verbs: dict[str, _Lazy] = {}
        for ep in metadata.entry_points(group=COMMANDS_GROUP):
            self._add(ep, builtin)
        for verb in [v for v in self.verbs if v in self.top.entries]:
            for ep in self.verbs.pop(verb).entries.values():
                warn(f"the command {ep.name!r} from {_origin(ep)} is refused: {verb!r} is "
                     "a command of its own, not a group of added commands")  # fmt: skip
        self._groups: dict[str, VerbGroup] = {}

    def _add(self, ep: metadata.EntryPoint, builtin: set[str]) -> None:
        verb, _, name = ep.name.rpartition(".")
        if "." in verb or not name or (verb == "" and ep.name.startswith(".")):
            warn(f"the command {ep.name!r} from {_origin(ep)} is refused: name it NAME or "
                 "VERB.NAME")  # fmt: skip
            return
        head = verb or name
        if head in builtin:
            warn(f"the command {ep.name!r} from {_origin(ep)} is refused: veracity has a "
                 f"built-in command {head!r}")  # fmt: skip
            return
        table = self.verbs.setdefault(verb, _Lazy()) if verb else self.top
        taken = table.entries.get(name)
        if taken is not None:
            warn(f"the command {ep.name!r} from {_origin(ep)} is refused: {_origin(taken)} "
                 "already adds it")  # fmt: skip
            return
        table.entries[name] = ep

    def names(self) -> list[str]:
        return sorted(set(self.top.names()) | set(self.verbs))

    def get(self, name: str) -> click.Command | None:
        if name in self.verbs:
            if name not in self._groups:
                self._groups[name] = VerbGroup(name, self.verbs[name])
            return self._groups[name]
        return self.top.get(name)


def plugin_commands(group: click.Group) -> PluginCommands:
    """The added commands of the top group `group` (read once per group)."""
    table = getattr(group, "_veracity_plugins", None)
    if table is None:
        table = PluginCommands(set(group.commands))
        group._veracity_plugins = table  # type: ignore[attr-defined]
    return table


def _load_run_option(ep: metadata.EntryPoint) -> RunOption | None:
    try:
        option = ep.load()
    except Exception as exc:  # a fault in a package's code leaves out its option only
        warn(f"the run option {ep.name!r} from {_origin(ep)} could not be loaded and is "
             f"left out: {type(exc).__name__}: {exc}")  # fmt: skip
        return None
    if not isinstance(option, RunOption):
        warn(f"the run option {ep.name!r} from {_origin(ep)} is left out: it is a "
             f"{type(option).__name__}, not a veracity.cli.plugins.RunOption")  # fmt: skip
        return None
    return option


def add_run_options(command: click.Command) -> None:
    """Add the ``veracity.run_options`` flags to `command` when it resolves a run
    (``check``, ``eval``); a flag the command already has is refused with a warning."""
    if command.name not in RUN_COMMANDS or getattr(command, "_veracity_run_options", False):
        return
    command._veracity_run_options = True  # type: ignore[attr-defined]
    for ep in metadata.entry_points(group=RUN_OPTIONS_GROUP):
        option = _load_run_option(ep)
        if option is None:
            continue
        flag = long_flag(option.flag)
        if flag is None:
            warn(f"the run option {option.flag!r} from {_origin(ep)} is refused: a run "
                 "option's flag is a long option such as --memory")  # fmt: skip
            continue
        taken = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        names = {p.name for p in command.params}
        if flag in taken or _param_name(flag) in names:
            warn(f"the run option {option.flag!r} from {_origin(ep)} is refused: "
                 f"`veracity {command.name}` already has {flag}")  # fmt: skip
            continue
        command.params.append(_declared(option, flag))


def long_flag(flag: str) -> str | None:
    """`flag` as a long option (``memory`` and ``--memory`` give ``--memory``), or None
    when it cannot be one (a short ``-m``, spaces, an empty name)."""
    m = _LONG_FLAG.match(flag.strip()) if isinstance(flag, str) else None
    return f"--{m.group(1)}" if m else None


def _param_name(flag: str) -> str:
    """The click parameter of a run option: one per flag, so that a value given to one
    option never reaches another (click files values by parameter name)."""
    return "run_option_" + flag[2:].replace("-", "_").lower()


def _declared(option: RunOption, flag: str) -> click.Parameter:
    """The flag as typer declares it (a stub command's one parameter, named for the flag):
    its value is kept in the command's context for `given_run_options`, not passed to the
    command."""

    def remember(ctx: typer.Context, value: Any) -> Any:
        if value is not None:
            ctx.meta.setdefault(_META, {})[option] = getattr(value, "value", value)
        return value

    def stub(value: Any = typer.Option(
        None, flag, help=option.help, callback=remember, expose_value=False
    )) -> None:  # fmt: skip
        """Never run."""

    choices = {c: c for c in option.choices or ()}
    stub.__annotations__["value"] = enum.Enum("Choices", choices) if choices else str
    holder = typer.Typer(**PLAIN)  # type: ignore[arg-type]
    holder.command()(stub)
    param = typer.main.get_command(holder).params[0]
    param.name = _param_name(flag)
    return param


def given_run_options(ctx: typer.Context) -> dict[RunOption, str]:
    """The run options given to the command of `ctx`, in the order the packages were
    read (empty when none was: the run's config then goes to no package's code)."""
    return dict(ctx.meta.get(_META, {}))


def with_run_options(config: Any, given: dict[RunOption, str]) -> Any:
    """`config` with the run options `given` (`given_run_options`) applied, in order.

    Raises:
        ConfigError: an option refused its value, or its package's code failed (one line
            naming the flag).
    """
    for option, value in given.items():
        try:
            config = option.apply(config, value)
        except ConfigError:
            raise
        except Exception as exc:  # a fault in a package's code: one line, not a traceback
            flag = long_flag(option.flag) or option.flag
            raise ConfigError(
                f"the run option {flag} {value!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
    return config
