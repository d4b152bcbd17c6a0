"""The import contract of DESIGN.md, checked on the source tree with `ast` (no imports run).

Rules (every ``import`` counts, including those inside functions and TYPE_CHECKING blocks):

1. Layers. A module may import its own layer and the layers below it, never one above.
   Lowest first:

   The foundation modules live in ``veracity.core`` and count as their own parts
   (``veracity.core.types`` is the part ``types``).

   - ``errors``, ``infra``, ``dates``, ``readers``, ``textio``, ``redaction``,
     ``untrusted`` — import nothing from veracity above this layer (bounded decoding,
     credential stripping, neutralising untrusted text);
   - ``types``, ``trace``, ``events``, ``usage``, ``labels``, ``config``, ``paper_table``,
     ``registry``, ``context``, ``limits``, ``checkpoints`` — data models, label spaces,
     settings and the papers' transcribed tables, registries, per-check accounting, input limits,
     saved trained parts;
   - ``llm``, ``prompting`` — the model layer and prompt templates;
   - ``nlp``, ``retrieval``, ``evidence``, ``tools`` — shared parts on top of the model
     layer (``tools``: the evidence layer as agents' tools, MCP client toolsets);
   - ``deliberation`` — debate engine, judges, stopping, ReAct;
   - ``methods`` — the methods;
   - ``documents`` — checking a whole document with one claim method;
   - ``runtime`` — the composition root;
   - ``datasets`` — benchmark loaders (read only by the harness and the front ends);
   - ``api``, ``evaluation``, ``cli``, ``server``, ``mcp``, ``batch``, ``testing``,
     ``doctor`` and the package's ``__init__``/``__main__`` — the entry points; so is a
     method's ``commands`` module (``veracity.methods.<m>.commands``, a module or a
     package: the part ``commands``), the method's front end on the command line.

2. No import cycle between top-level parts (a part may import a sibling of its layer,
   but not in both directions, directly or through others).
3. No method imports another: inside ``veracity.methods`` a method (a package such as
   ``radar`` or a module such as ``rag``) imports only itself and the shared plumbing
   (``methods.base``, ``methods.labelling``, ``methods.passages`` and the ``methods``
   package).
4. Only ``veracity.testing`` itself imports ``veracity.testing`` (tests and benchmarks
   live outside the package and may).
5. No ambient settings below ``runtime``: a module of a layer below ``runtime`` never
   calls ``settings()`` or ``LLMConfig.from_settings()`` of ``veracity.core.config``
   (the environment is read by the composition root, which passes paths and switches
   down); ``veracity.core.config`` itself, which defines them, is exempt.
6. A method's ``commands`` module is loaded only through the ``veracity.commands`` and
   ``veracity.run_options`` entry points (`veracity.cli.plugins`), as an outside plugin's
   would be: no other module imports it, neither its own method nor ``veracity.cli``.
   It fronts its own method, whose modules it may import (it is not one of the front
   ends of rule 7), and never another method's (rule 3).
7. Front ends go through the service. The entry points that check inputs —
   ``veracity.api``, ``veracity.cli``, ``veracity.server``, ``veracity.mcp`` and the batch
   front ends ``veracity.evaluation.batch`` and ``.document_batch`` — import none of the
   machinery between the foundation and ``runtime`` (``llm``, ``prompting``, ``nlp``,
   ``retrieval``, ``evidence``, ``tools``, ``deliberation``, ``methods``). They reach it
   through ``veracity.runtime`` (the `Veracity` service, its input rule, rules and
   listing), and may import the public API (``veracity``), the registries
   (``veracity.core.registry``), the rest of the foundation (``veracity.core``: types,
   errors, labels, config, trace and textio, for reading input and rendering),
   ``datasets``, the other entry points and their own package. A module that fronts one
   piece of machinery itself is named in `FRONT_END_EXEMPT` with its reason. (``doctor``
   diagnoses the machinery, and the rest of ``evaluation`` is the harness: neither is a
   front end here.)
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer)
    for layer in (
        {"core", "errors", "infra", "dates", "readers", "textio", "redaction", "untrusted"}
        | {"extras", "weblinks"}
        | {"storage"}
        | {"dirlock", "netguard"}
        | {"paths"},
        {
            "types",
            "trace",
            "events",
            "usage",
            "labels",
            "config",
            "registry",
            "context",
            "limits",
            "checkpoints",
            "paper_table",
        },
        {"llm", "prompting", "prompt_layout"},
        {"nlp", "retrieval", "evidence", "tools"},
        {"deliberation"},
        {"methods"},
        {"documents"},
        {"runtime"},
        {"datasets"},
        {"api", "evaluation", "cli", "server", "mcp", "batch", "testing", "doctor"}
        | {"__init__", "__main__"}
        | {"commands"},
    )
)
MACHINERY = frozenset(
    {"llm", "prompting", "prompt_layout", "nlp", "retrieval", "evidence", "tools"}
    | {"deliberation", "methods"}
)
FRONT_ENDS = (
    "veracity.api", "veracity.cli", "veracity.server", "veracity.mcp",
    "veracity.evaluation.batch", "veracity.evaluation.document_batch",
)  # fmt: skip
FRONT_END_EXEMPT = {
    "veracity.cli.index": "the `index` command builds and searches the local corpus itself",
    "veracity.cli.models": "the `models` command lists and pulls the model catalogue itself",
    "veracity.mcp.tool_server": "serves the evidence tools layer itself as MCP tools",
}
SHARED_METHOD_MODULES = frozenset(
    {"veracity.methods", "veracity.methods.base", "veracity.methods.labelling"}
    | {"veracity.methods.passages", "veracity.methods.config"}
)


@dataclass(frozen=True, order=True)
class Violation:
    module: str
    imported: str
    line: int
    rule: str

    def __str__(self) -> str:
        if not self.imported:
            return self.rule
        if self.rule == SETTINGS_RULE:
            return f"{self.module}:{self.line} calls {self.imported}() — {self.rule}"
        return f"{self.module}:{self.line} imports {self.imported} — {self.rule}"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def parse(path: Path) -> ast.Module:
    """The syntax tree of `path`, parsed once per distinct text (the planted-violation tests
    check many copies of one tree); callers only read it."""
    text = path.read_text(encoding="utf-8")
    try:
        return _parsed(text)
    except SyntaxError:
        return ast.parse(text, filename=str(path))  # raised again, naming the file


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> ast.Module:
    return ast.parse(text)


def imports_of(path: Path, root: Path) -> Iterator[tuple[str, int]]:
    """(imported veracity module, line) for every import statement in `path`."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = parse(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # a module, or a name inside the module `target`
                yield f"{target}.{alias.name}", node.lineno


def part_of(module: str) -> str | None:
    """The top-level part (``llm``, ``methods``, ...) of a veracity module."""
    parts = module.split(".")
    if parts[0] != "veracity":
        return None
    if len(parts) > 2 and parts[1] == "core":  # the foundation package holds two layers
        return parts[2]
    if len(parts) > 3 and parts[1] == "methods" and parts[3] == "commands":
        return "commands"  # a method's command-line front end (rule 6)
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(part: str) -> int | None:
    return next((i for i, layer in enumerate(LAYERS) if part in layer), None)


def front_end(module: str) -> bool:
    """Whether `module` is a front end that reaches the machinery only through runtime."""
    inside = any(module == f or module.startswith(f + ".") for f in FRONT_ENDS)
    return inside and module not in FRONT_END_EXEMPT


def method_unit(module: str) -> str | None:
    """``veracity.methods.radar`` for any module of RADAR; None for the shared plumbing."""
    if not module.startswith("veracity.methods.") or module in SHARED_METHOD_MODULES:
        return None
    return ".".join(module.split(".")[:3])


def _known(module: str, modules: set[str]) -> str | None:
    """The longest existing module `module` names (``from pkg import name`` may name a
    function rather than a module)."""
    while module and module not in modules:
        module = module.rpartition(".")[0]
    return module or None


def check_tree(root: Path) -> list[Violation]:
    """Every breach of the contract in the source tree whose top package is ``root/veracity``."""
    files = sorted((root / "veracity").rglob("*.py"))
    modules = {module_name(p, root) for p in files}
    violations: set[Violation] = set()
    graph: dict[str, set[str]] = {}
    for path in files:
        src = module_name(path, root)
        src_part = part_of(src) or ""
        for raw, line in imports_of(path, root):
            target = _known(raw, modules)
            if target is None or target == src:
                continue
            dst_part = part_of(target) or ""
            for rule in _rules(src, src_part, target, dst_part):
                violations.add(Violation(src, target, line, rule))
            if src_part != dst_part:
                graph.setdefault(src_part, set()).add(dst_part)
    violations.update(_cycles(graph))
    violations.update(_settings_reads(files, root))
    return sorted(violations)


CONFIG_MODULE = "veracity.core.config"
SETTINGS_READERS = frozenset({"settings", "from_settings"})  # functions that read VERACITY_*
SETTINGS_RULE = "reads the environment's settings below veracity.runtime (pass it down)"


def _settings_reads(files: list[Path], root: Path) -> Iterator[Violation]:
    """Rule 5: calls of `SETTINGS_READERS` in modules below ``runtime``."""
    runtime = layer_of("runtime")
    for path in files:
        module = module_name(path, root)
        layer = layer_of(part_of(module) or "")
        if module == CONFIG_MODULE or layer is None or runtime is None or layer >= runtime:
            continue
        tree = parse(path)
        for line in settings_calls(tree, module, path.name == "__init__.py"):
            yield Violation(module, f"{CONFIG_MODULE}.settings", line, SETTINGS_RULE)


def settings_calls(tree: ast.AST, module: str, is_package: bool) -> Iterator[int]:
    """Lines that call ``settings()`` or ``X.from_settings()``, where the name was imported
    from `CONFIG_MODULE` (directly, as the module, or as a class of it)."""
    package = module if is_package else module.rpartition(".")[0]
    direct: set[str] = set()  # names bound to a settings reader
    owners: set[str] = set()  # names bound to the config module or one of its classes
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                bound = alias.asname or alias.name
                if target == CONFIG_MODULE and alias.name in SETTINGS_READERS:
                    direct.add(bound)
                elif target == CONFIG_MODULE or f"{target}.{alias.name}" == CONFIG_MODULE:
                    owners.add(bound)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == CONFIG_MODULE and alias.asname:
                    owners.add(alias.asname)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        named = isinstance(func, ast.Name) and func.id in direct
        reached = (
            isinstance(func, ast.Attribute)
            and func.attr in SETTINGS_READERS
            and _root_name(func.value) in owners | {"veracity"}
        )
        if named or reached:
            yield node.lineno


def _root_name(node: ast.expr) -> str | None:
    """The leftmost name of ``a.b.c`` (``a``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


COMMANDS_RULE = "a method's commands module is loaded through its entry points, never imported"


def _rules(src: str, src_part: str, target: str, dst_part: str) -> Iterator[str]:
    if dst_part == "testing" and src_part != "testing":
        yield "only tests import veracity.testing"
    if dst_part == "commands" and src_part != "commands":
        yield COMMANDS_RULE
    src_layer, dst_layer = layer_of(src_part), layer_of(dst_part)
    if src_layer is None:
        yield f"veracity.{src_part} belongs to no layer of the import contract"
    elif dst_layer is None:
        yield f"veracity.{dst_part} belongs to no layer of the import contract"
    elif dst_layer > src_layer:
        yield f"layer {src_part} may not import the higher layer {dst_part}"
    if dst_part in MACHINERY and front_end(src):
        yield f"a front end reaches veracity.{dst_part} only through veracity.runtime"
    unit, other = method_unit(src), method_unit(target)
    if unit is not None and other is not None and unit != other:
        yield "a method imports another method"


def _cycles(graph: dict[str, set[str]]) -> Iterator[Violation]:
    """One violation per group of parts that import each other (directly or not)."""

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {part: reach(part) for part in graph}
    groups = {
        tuple(sorted({a} | {b for b in reached[a] if a in reached.get(b, ())}))
        for a in graph
        if a in reached[a]
    }
    for group in sorted(groups):
        names = ", ".join(f"veracity.{part}" for part in group)
        yield Violation(names, "", 0, f"import cycle between {names}")
