"""What adding a method costs outside its own folder (issue 39: goal at most 3 places).

A small demo method is written as a package of its own in a temporary folder and
registered through the ``veracity.methods`` entry point group, as a built-in method is in
pyproject.toml. In a fresh process it is checked end to end (the registry loads it, a
check through the service answers, ``veracity methods`` lists it), and then each rule of
the test suite that holds for *every registered method* is run with the demo installed:
a rule that fails names a place outside the method's folder a new built-in method must
edit. Registration itself (the entry point line) is the first place.

Not enforced, so not counted: ``veracity methods`` lists a method that no group of
`veracity.cli.plain_listing.GROUPS` names under "Other methods (plugins)", so a built-in
one adds its name there to be grouped; a compared system also adds its row to
docs/baselines.md (its test takes the list from GROUPS).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from veracity.cli.plain_listing import OTHER

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"

DEMO = '''
from veracity.methods.base import BaseMethod
from veracity.methods.config import MethodConfig


class DemoConfig(MethodConfig):
    """The demo's options (none of its own)."""


class DemoMethod(BaseMethod):
    """Answers every input with the first label of its label space."""

    name = "demo"
    config_class = DemoConfig
    input_kinds = ("claim",)
    description = "a demo for the new-method test: the first label, always"

    async def run(self, item, ctx):
        return self.verdict(label=self.label_space.labels[0], rationale="demo")
'''

# Each rule of the suite that every registered method must meet, with the place outside
# the method's folder that meets it (file :: test function).
RULES = {
    "docs/method-table.md (a row naming the method)": (
        "contract/test_docs_site.py",
        "test_every_registered_method_is_in_the_method_table",
    ),
    "tests/data/prompts_pinned.json (the method's prompts pinned; generated)": (
        "unit/test_prompts_pinned.py",
        "test_every_method_and_layout_is_pinned",
    ),
}

# The other rules over every registered method (or every registered thing), which a
# method meets inside its own folder: run with the demo installed, they must pass.
MET_INSIDE = {
    "its options (inside its folder)": (
        "unit/test_method_options.py",
        "test_every_registered_method_declares_only_safe_options",
    ),
    "its embedded run (a plan only to cut it down)": (
        "integration/test_methods_embedded.py",
        "test_every_plan_is_for_an_installed_method",
    ),
    "its CLI flags (none)": (
        "reliability/test_numeric_bounds.py",
        "test_every_numeric_cli_flag_has_a_maximum",
    ),
    "the experiment files (a paper method adds its own)": (
        "unit/test_experiments.py",
        "test_every_main_table_has_a_config",
    ),
}
REGISTRY_WORDS = (
    "registry.methods",
    '"veracity.methods"',
    "methods.names()",
    "methods.entry_point_names()",
)


def rules_over_every_method() -> set[tuple[str, str]]:
    """(file, function) of each argument-free ``test_every_*`` in a test module that
    reads the methods' registry: the suite's rules over every registered method."""
    found = set()
    for path in sorted(TESTS.rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if not any(word in text for word in REGISTRY_WORDS):
            continue
        for node in ast.parse(text).body:
            if (
                isinstance(node, ast.FunctionDef)
                and node.name.startswith("test_every_")
                and not node.args.args
            ):
                found.add((path.relative_to(TESTS).as_posix(), node.name))
    return found


PROBE = r"""
import asyncio, importlib, json, sys
from pathlib import Path

from typer.testing import CliRunner

from veracity.cli import app
from veracity.core import registry
from veracity.core.config import RunConfig
from veracity.core.types import Claim
from veracity.runtime.service import Veracity
from veracity.testing import ScriptedLLM

def load(path):
    # as pytest imports it: a module of its folder, or of its folder's package
    folder = path.parent
    package = (folder / "__init__.py").is_file()
    sys.path.insert(0, str(folder.parent if package else folder))
    return importlib.import_module(f"{folder.name}.{path.stem}" if package else path.stem)


tests, rules, inside = Path(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
found = {"registered": "demo" in registry.methods.entry_point_names()}
service = Veracity(RunConfig(), llm=ScriptedLLM())
verdict = asyncio.run(service.check(Claim(text="x"), method="demo"))
found["label"] = verdict.label
listing = CliRunner().invoke(app, ["methods"]).stdout
lines = listing.splitlines()
found["listed"] = any(line.split()[:1] == ["demo"] for line in lines)
headings = [line for line in lines[: [line.split()[:1] for line in lines].index(["demo"])]
            if line and not line.startswith(" ")]
found["group"] = headings[-1] if headings else None
failing = []
for place, (path, function) in rules.items():
    module = load(tests / path)
    try:
        getattr(module, function)()
    except AssertionError:
        failing.append(place)
found["places"] = failing
failing = []
for place, (path, function) in inside.items():
    module = load(tests / path)
    try:
        getattr(module, function)()
    except AssertionError as exc:
        failing.append(f"{place}: {exc}")
found["inside_failing"] = failing
print(json.dumps(found))
"""


def _install_demo(site: Path) -> None:
    (site / "veracity_demo_method").mkdir(parents=True)
    (site / "veracity_demo_method" / "__init__.py").write_text(DEMO, encoding="utf-8")
    info = site / "veracity_demo_method-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: veracity-demo-method\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[veracity.methods]\ndemo = veracity_demo_method:DemoMethod\n", encoding="utf-8"
    )


def test_the_rules_over_all_methods_are_all_counted_here():
    known = {tuple(rule) for rule in (*RULES.values(), *MET_INSIDE.values())}
    assert rules_over_every_method() == known


def test_a_new_method_touches_at_most_three_places_outside_its_folder(tmp_path):
    _install_demo(tmp_path)
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "VERACITY_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROBE), str(TESTS), json.dumps(RULES),
         json.dumps(MET_INSIDE)],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["registered"] and found["listed"], found
    assert found["label"], found
    assert found["group"] == OTHER, found
    assert found["inside_failing"] == [], found
    places = ["pyproject.toml (the veracity.methods entry point)", *found["places"]]
    assert places == [
        "pyproject.toml (the veracity.methods entry point)",
        "docs/method-table.md (a row naming the method)",
        "tests/data/prompts_pinned.json (the method's prompts pinned; generated)",
    ]
    assert len(places) <= 3, places
