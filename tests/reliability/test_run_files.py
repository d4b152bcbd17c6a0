"""A run file or a recorded spec is data (issue 38, item 1): its templates cannot run code,
its paths resolve against its own folder and stay there, and re-running a spec that names
an endpoint, a key variable, a command or files elsewhere needs ``--trust-spec``.

Every case goes through the real ``veracity eval`` command (typer's runner, in process);
the model is a scripted one, so nothing is sent anywhere and each test can count calls.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.errors import PromptError
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.prompting import PromptBundle, render_messages, using_prompts
from veracity.testing import ScriptedLLM

from .conftest import write_liar

runner = CliRunner()

# the two payloads of the issue: an expression and a statement that reach `os`
POPEN = '{{ cycler.__init__.__globals__.os.popen("touch MARK").read() | data("claim") }}'
SYSTEM = '{% if cycler.__init__.__globals__.os.system("touch MARK") %}{% endif %}'
PAYLOADS = {"popen expression": POPEN, "system statement": SYSTEM}


def template(body: str) -> str:
    """An override of the `direct` method's template around `body`."""
    return f'{{# trusted: labels, kind #}}\n<|user|>\n{body}\n{{{{ input | data("input") }}}}\n'


@pytest.fixture
def model(monkeypatch) -> ScriptedLLM:
    """The model every run builds: scripted, answering ``true`` (a LIAR label)."""
    llm = ScriptedLLM(default='{"label": "true"}')

    def build_llm(cfg, *, cache_path=None, **_):
        return ManagedLLM(llm, cache=ResponseCache(cache_path, mode="off"))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    return llm


@pytest.fixture
def data(tmp_path) -> Path:
    return write_liar(tmp_path / "data", 3)


def evaluate(data: Path, out: Path, *args: str):
    base = ["eval", "--data-dir", str(data), "--out", str(out), "--no-progress"]
    return runner.invoke(app, [*base, *args])


def run_file(folder: Path, extra: str = "") -> Path:
    """A run YAML in `folder` (created) on the LIAR set, `extra` YAML lines added."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "run.yaml"
    path.write_text(
        "method: direct\ndataset: liar\nsplit: train\nlimit: 1\nconcurrency: 1\n" + extra,
        encoding="utf-8",
    )
    return path


@pytest.fixture
def recorded(tmp_path, data, model) -> Path:
    """A run directory that an OpenAI-compatible run recorded (the model is scripted)."""
    out = tmp_path / "recorded"
    result = evaluate(
        data, out, "--method", "direct", "--dataset", "liar", "--split", "train",
        "--limit", "1", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    model.calls.clear()
    return out


def edit_spec(run_dir: Path, change) -> None:
    path = run_dir / "run.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    change(record["spec"])
    path.write_text(json.dumps(record), encoding="utf-8")


def sent(model: ScriptedLLM) -> str:
    """Every message the model was sent, as one text."""
    return "\n".join(m.content for r in model.calls for m in r.messages)


def one_line(output: str) -> str:
    return " ".join(output.split())


# ------------------------------------------------------------------ templates run no code


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_a_run_file_template_cannot_run_code(tmp_path, data, model, payload):
    marker = tmp_path / "ran"
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "t.j2").write_text(template(payload.replace("MARK", str(marker))))
    config = run_file(folder, "prompts: {templates: {direct.j2: t.j2}}\n")
    result = evaluate(data, tmp_path / "out", "--config", str(config))
    assert result.exit_code == 2, result.output
    assert "reaches into" in result.output and "__globals__" in one_line(result.output)
    assert "Traceback" not in result.output
    assert not marker.exists() and model.calls == []


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_a_spec_template_cannot_run_code_even_when_trusted(tmp_path, data, recorded, payload):
    marker = tmp_path / "ran"
    (recorded / "t.j2").write_text(template(payload.replace("MARK", str(marker))))
    edit_spec(recorded, lambda s: s["prompts"].update(templates={"direct.j2": "t.j2"}))
    result = evaluate(data, tmp_path / "again", "--spec", str(recorded), "--trust-spec")
    assert result.exit_code == 2, result.output
    assert "reaches into" in result.output and not marker.exists()


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_the_sandbox_refuses_what_the_audit_never_saw(tmp_path, payload):
    """Rendering itself is sandboxed: an override that skipped `bind` still runs nothing."""
    marker = tmp_path / "ran"
    text = template(payload.replace("MARK", str(marker)))
    bundle = PromptBundle((("direct.j2", text),), package="veracity.methods")
    with using_prompts(bundle), pytest.raises(PromptError, match="sandbox"):
        render_messages("veracity.methods", "direct.j2", input="x", labels="a", kind="claim")
    assert not marker.exists()


# ------------------------------------------------------------- paths stay in the folder


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        ("prompts: {templates: {direct.j2: /etc/passwd}}\n", "prompts.templates.direct.j2"),
        ("prompts: {templates: {direct.j2: ../outside/t.j2}}\n", "prompts.templates.direct.j2"),
        ("prompts: {templates: {direct.j2: link.j2}}\n", "prompts.templates.direct.j2"),
        ("prompts: {dir: ../outside}\n", "prompts.dir"),
        ("dataset_options: {path: ../outside/train.tsv}\n", "dataset_options.path"),
        ("sources: {rec: {type: recorded, path: /etc}}\n", "sources.rec.path"),
    ],
    ids=["absolute", "dot-dot", "symlink", "prompts.dir", "dataset path", "source path"],
)
def test_a_run_file_cannot_name_files_outside_its_folder(tmp_path, data, model, extra, option):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "t.j2").write_text(template("OUTSIDE-SECRET"))
    (outside / "train.tsv").write_text("OUTSIDE-SECRET\n")
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "link.j2").symlink_to(outside / "t.j2")
    config = run_file(folder, extra)
    result = evaluate(data, tmp_path / "out", "--config", str(config))
    assert result.exit_code == 2, result.output
    text = one_line(result.output)
    assert option in text and "outside the run file's folder" in text
    assert model.calls == []


def test_a_path_from_the_command_line_is_the_users_own(tmp_path, data, model):
    """A run file's data directory elsewhere is refused; the same folder given with
    ``--data-dir`` is used (the flag replaces what the file says)."""
    config = run_file(tmp_path / "shared", f"data_dir: {data}\n")
    result = runner.invoke(app, ["eval", "--config", str(config), "--no-progress",
                                 "--out", str(tmp_path / "a")])  # fmt: skip
    assert result.exit_code == 2 and "data_dir" in one_line(result.output)
    assert evaluate(data, tmp_path / "b", "--config", str(config)).exit_code == 0


def test_run_file_paths_resolve_against_its_folder_not_the_working_directory(
    tmp_path, data, model, monkeypatch
):
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "mine.j2").write_text(template("HOUSE-TEMPLATE"))
    config = run_file(folder, "prompts: {templates: {direct.j2: mine.j2}}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = evaluate(data, tmp_path / "out", "--config", str(config))
    assert result.exit_code == 0, result.output
    assert model.calls and "HOUSE-TEMPLATE" in sent(model)


def test_spec_paths_resolve_against_its_run_directory(tmp_path, data, model, recorded):
    (recorded / "mine.j2").write_text(template("HOUSE-TEMPLATE"))
    edit_spec(recorded, lambda s: s["prompts"].update(templates={"direct.j2": "mine.j2"}))
    # the user's own endpoint on the command line: the spec then reaches nothing outside
    own = ["--base-url", "http://127.0.0.1:9/v1"]
    result = evaluate(data, tmp_path / "again", "--spec", str(recorded), *own)
    assert result.exit_code == 0, result.output
    assert model.calls and "HOUSE-TEMPLATE" in sent(model)


# ------------------------------------------------------- a spec's reach needs --trust-spec


def _endpoint_and_key(spec: dict) -> None:
    spec["llm"]["options"].update(base_url="http://collector.example/v1",
                                  api_key_env="OPENAI_API_KEY")  # fmt: skip


def test_a_spec_naming_an_endpoint_and_a_key_needs_trust(tmp_path, data, model, recorded):
    edit_spec(recorded, _endpoint_and_key)
    refused = evaluate(data, tmp_path / "a", "--spec", str(recorded))
    assert refused.exit_code == 2, refused.output
    text = one_line(refused.output)
    assert "http://collector.example/v1" in text and "OPENAI_API_KEY" in text
    assert "--trust-spec" in text and model.calls == []
    assert not (tmp_path / "a").exists()  # stopped before anything was built or written
    accepted = evaluate(data, tmp_path / "b", "--spec", str(recorded), "--trust-spec")
    assert accepted.exit_code == 0, accepted.output
    assert len(model.calls) == 1  # the scripted model stands in for the endpoint


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        (lambda s: s["prompts"].update(templates={"direct.j2": "/etc/passwd"}), "/etc/passwd"),
        (lambda s: s.update(dataset_options={"path": "../elsewhere.tsv"}), "dataset_options"),
        (
            lambda s: s.update(
                method="mermaid", labels="true_false",
                method_config={"mcp_servers": [{"name": "x", "command": sys.executable}]},
            ),
            "method_config.mcp_servers",
        ),
    ],
    ids=["/etc/passwd template", "dataset path outside", "a command to launch"],
)  # fmt: skip
def test_a_spec_reaching_outside_its_run_directory_is_shown_and_refused(
    tmp_path, data, model, recorded, change, shown
):
    edit_spec(recorded, change)
    own = ["--base-url", "http://127.0.0.1:9/v1"]  # the endpoint is the user's own
    result = evaluate(data, tmp_path / "again", "--spec", str(recorded), *own)
    assert result.exit_code == 2, result.output
    text = one_line(result.output)
    assert shown in text and "--trust-spec" in text and model.calls == []


# ------------------------------------------------------------ key variables look like keys


@pytest.mark.parametrize("name", ["HOME", "PATH", "AWS_SECRET_ACCESS_KEY", "openai_api_key"])
def test_api_key_env_must_name_a_key_in_a_run_file(tmp_path, data, model, name):
    llm = f"llm: {{backend: openai, base_url: 'http://127.0.0.1:9/v1', api_key_env: {name}}}\n"
    result = evaluate(data, tmp_path / "out", "--config", str(run_file(tmp_path / "f", llm)))
    assert result.exit_code == 2, result.output
    assert "does not name an API key variable" in one_line(result.output)
    assert model.calls == []


def test_api_key_env_must_name_a_key_in_a_trusted_spec(tmp_path, data, model, recorded):
    edit_spec(recorded, lambda s: s["llm"]["options"].update(api_key_env="HOME"))
    result = evaluate(data, tmp_path / "again", "--spec", str(recorded), "--trust-spec")
    assert result.exit_code == 2, result.output
    assert "does not name an API key variable" in one_line(result.output)
    assert model.calls == []
