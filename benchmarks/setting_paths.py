"""Files a setting passes through (issue 39's first figure): ``veracity check`` run in this
process with ``--model``, ``--set`` and ``--labels``, each given a value of its own, and
every veracity source file listed in which a function receives the value or returns it.

Run: python benchmarks/setting_paths.py [--detail]
(against another tree: PYTHONPATH=/tmp/wt/src python benchmarks/setting_paths.py)

How it counts. A profile hook (`sys.setprofile`, every thread) watches each call of a
function defined under ``src/veracity`` (``veracity/testing`` left out: the stand-in model
is the benchmark's, not the road's). A file is on a setting's road when one of its
functions

- is called with an argument (``self``/``cls`` left out: an object's own state is not
  handed to it) that *holds* the value, or
- returns an object that holds it,

from the start of the command until the value's consumer is called (the consumer's file
counts; what the consumer's own call reaches is listed apart, and what runs after it is
the value's use, not its road). An object holds the value when it equals it (same type)
or holds it within four steps through mapping values, sequence items, pydantic fields
and dataclass fields. So a relay that takes a config holding the model name and passes
it on counts, as does the parser that first gets it; a function that reads
``self.config`` does not. The values are chosen so that nothing else in a check equals
them, and the consumers are those the issue names (the model factory, the method):

- ``--model`` a GGUF path (``/tmp/road-sentinel-model.gguf``) for the embedded backend,
  consumed by the model factory (`veracity.llm.factory.build_llm`; within it the backend
  resolves the path); the backend's ``complete`` answers from a script (no model is
  loaded, nothing is pulled);
- ``--set max_input_chars=5432`` (as typed and as the number) for ``direct``, consumed by
  the method's construction (`BaseMethod.__init__`);
- ``--labels true_false``, consumed by the method's construction (the `LabelSpace` of
  that name holds it).

Each setting is checked by a run of its own (the other two flags absent, the label space
then the method's default, so the reply names a label of either space).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import threading
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MODEL = "/tmp/road-sentinel-model.gguf"
# setting -> (its flags, the forms of its value: as typed, as parsed; where its road ends:
# the consumer, (file under veracity/, function) pairs)
SETTINGS: dict[str, tuple[list[str], tuple[Any, ...], set[tuple[str, str]]]] = {
    "--model": (
        ["--model", MODEL],
        (MODEL,),
        {("llm/factory.py", "build_llm")},
    ),
    "--set": (
        ["--set", "max_input_chars=5432"],
        ("max_input_chars=5432", 5432),
        {("methods/base.py", "__init__")},
    ),
    "--labels": (
        ["--labels", "true_false"],
        ("true_false",),
        {("methods/base.py", "__init__")},
    ),
}
DEPTH = 4


def holds(obj: Any, value: Any, depth: int = DEPTH, seen: set[int] | None = None) -> bool:
    """Whether `obj` is `value` (equal, same type) or holds it within `depth` steps."""
    if type(obj) is type(value) and obj == value:
        return True
    if depth == 0 or isinstance(obj, (str, bytes, int, float, bool, type(None))):
        return False
    seen = seen if seen is not None else set()
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    from pydantic import BaseModel

    if isinstance(obj, Mapping):
        parts = list(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        parts = list(obj)
    elif isinstance(obj, BaseModel):
        parts = list(obj.__dict__.values())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        parts = [getattr(obj, f.name, None) for f in dataclasses.fields(obj)]
    else:
        return False
    return any(holds(p, value, depth - 1, seen) for p in parts[:200])


class Road:
    """The veracity functions that received or returned one of `forms` (a value as typed
    and as parsed), by file, from the start of the command until the consumer's first
    call returns (a pair in `ends`: what the value is for; what the consumer then does
    with it is its use, not its road)."""

    def __init__(self, forms: tuple[Any, ...], ends: set[tuple[str, str]], src: Path):
        self.forms = forms
        self.src = str(src) + "/"
        self.skip = str(src / "testing") + "/"
        self.ends = {(self.src + f, name) for f, name in ends}
        self.hits: dict[str, set[str]] = defaultdict(set)
        self.inside: dict[str, set[str]] = defaultdict(set)  # within the consumer's call
        self.consumer: Any = None  # the consumer's frame while it runs
        self.done = False

    def _ours(self, filename: str) -> bool:
        return filename.startswith(self.src) and not filename.startswith(self.skip)

    def _holds(self, obj: Any) -> bool:
        return any(holds(obj, form) for form in self.forms)

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if self.done or event not in ("call", "return") or not self._ours(code.co_filename):
            return
        start = event == "call" and self.consumer is None
        if start and (code.co_filename, code.co_name) in self.ends:
            self.consumer = frame
        hits = self.hits if self.consumer in (None, frame) else self.inside
        try:
            if event == "call":
                n = code.co_argcount + code.co_kwonlyargcount
                n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
                for name in code.co_varnames[:n]:
                    if name in ("self", "cls") or name not in frame.f_locals:
                        continue
                    if self._holds(frame.f_locals[name]):
                        hits[code.co_filename].add(f"{code.co_name}({name})")
            elif arg is not None and self._holds(arg):
                hits[code.co_filename].add(f"{code.co_name} -> returns")
        except Exception:  # an object that cannot be looked into: not counted
            pass
        if event == "return" and frame is self.consumer:
            self.done = True

    def files(self, inside: bool = False) -> dict[str, list[str]]:
        """The files on the road (with `inside`: those the consumer's own call reaches
        that are not on it), each with its functions."""
        root = self.src.rstrip("/")
        hits = self.inside if inside else self.hits
        return {
            str(Path(f).relative_to(root)).removesuffix(".py"): sorted(h)
            for f, h in sorted(hits.items())
            if not (inside and f in self.hits)
        }


def scripted_embedded(patch: Any = setattr) -> None:
    """The embedded backend answers from a script: nothing is loaded or pulled (`patch`:
    how to set the stand-ins, e.g. a test's ``monkeypatch.setattr``)."""
    from veracity.llm.embedded import EmbeddedLLM
    from veracity.testing import ScriptedLLM, ScriptedReply

    scripted = ScriptedLLM(
        default=ScriptedReply(
            '{"label": "false"}', alternatives={"false": 0.8, "true": 0.2}, at="false"
        )
    )

    async def complete(self: Any, request: Any) -> Any:
        return await scripted.complete(request)

    patch(EmbeddedLLM, "complete", complete)
    patch(EmbeddedLLM, "load", lambda self: None)


def trace(
    flags: list[str],
    forms: tuple[Any, ...],
    ends: set[tuple[str, str]],
    folder: Path = Path("/tmp"),
) -> Road:
    """The road of a value (`forms`) through ``veracity check ... --json`` with `flags`,
    to its consumer (`ends`), the run file written in `folder`.

    Raises:
        SystemExit: the check failed or never called the consumer.
    """
    from typer.testing import CliRunner

    import veracity
    from veracity.cli import app

    src = Path(veracity.__file__).resolve().parent
    road = Road(forms, ends, src)
    argv = ["check", "The Eiffel Tower is in Berlin.", "--json", "--config", _run_file(folder)]
    threading.setprofile(road)
    sys.setprofile(road)
    try:
        result = CliRunner().invoke(app, [*argv, *flags])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    if result.exit_code != 0:
        raise SystemExit(f"{flags}: veracity check exited {result.exit_code}: {result.output}")
    if road.consumer is None:
        raise SystemExit(f"{flags}: the consumer {sorted(ends)} was never called")
    return road


def _run_file(folder: Path = Path("/tmp")) -> str:
    """A run file naming another GGUF path, so each run builds the embedded backend
    without touching the catalogue (``--model`` replaces that path with `MODEL`)."""
    path = folder / "road-setting-paths.yaml"
    path.write_text("method: direct\nllm: {model: /tmp/road-file-model.gguf}\n")
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--detail", action="store_true", help="list the functions per file")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    scripted_embedded()
    roads = {name: trace(*setting) for name, setting in SETTINGS.items()}
    if args.json:
        print(json.dumps({k: sorted(r.files()) for k, r in roads.items()}, indent=1))
        return
    for name, road in roads.items():
        print(f"{name}: {len(road.files())} files")
        for file, hits in road.files().items():
            print(f"  {file}" + (f": {', '.join(hits)}" if args.detail else ""))
        inside = road.files(inside=True)
        if inside:
            print(f"  (then within the consumer: {', '.join(inside)})")


if __name__ == "__main__":
    main()
