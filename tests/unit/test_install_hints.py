"""Missing extras (issue 27, part 7): the install command fits how veracity was installed,
and `--engine ray` without Ray stops with it before a run creates anything."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.cli.common import engine_for
from veracity.core import extras
from veracity.core.errors import ConfigError, EngineError
from veracity.core.extras import Installation, install_command, installation

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "datasets"


def _dist(tmp_path: Path, direct_url: object | None) -> metadata.Distribution:
    """An installed-package record of veracity, with `direct_url` as its direct_url.json."""
    info = tmp_path / "veracity-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: veracity\nVersion: 0.1.0\n")
    if direct_url is not None:
        text = direct_url if isinstance(direct_url, str) else json.dumps(direct_url)
        (info / "direct_url.json").write_text(text)
    return metadata.PathDistribution(info)


def test_an_editable_checkout_gets_pip_install_e(tmp_path):
    checkout = tmp_path / "veracity-src"
    checkout.mkdir()
    dist = _dist(tmp_path, {"url": checkout.as_uri(), "dir_info": {"editable": True}})
    how = installation(dist)
    assert how == Installation(checkout=checkout, editable=True)
    assert install_command("server", how, cwd=checkout) == 'pip install -e ".[server]"'
    elsewhere = install_command("ray", how, cwd=tmp_path)
    assert elsewhere == f'pip install -e "{checkout}[ray]"'
    assert install_command(None, how, cwd=checkout) == "pip install -e ."


@pytest.mark.parametrize(
    "direct_url",
    [
        None,  # installed from an index: pip writes no direct_url.json
        {"url": "https://example.org/veracity-0.1.0-py3-none-any.whl", "archive_info": {}},
        {"url": "https://github.com/example/veracity", "vcs_info": {"vcs": "git"}},
        "{not json",
        ["a", "list"],
    ],
)
def test_a_normal_install_gets_the_package_with_its_extra(tmp_path, direct_url):
    how = installation(_dist(tmp_path, direct_url))
    assert how == Installation()
    assert install_command("server", how, cwd=tmp_path) == 'pip install "veracity[server]"'
    assert install_command(None, how) == "pip install veracity"


def test_a_plain_install_from_a_folder_names_the_folder_without_e(tmp_path):
    folder = tmp_path / "src dir"  # a space: the argument stays quoted
    folder.mkdir()
    how = installation(_dist(tmp_path, {"url": folder.as_uri(), "dir_info": {}}))
    assert how == Installation(checkout=folder, editable=False)
    assert install_command("ray", how, cwd=tmp_path) == f'pip install "{folder}[ray]"'
    assert install_command(None, how, cwd=tmp_path) == f'pip install "{folder}"'


def test_a_source_tree_pip_never_installed_counts_as_an_editable_checkout(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(extras.metadata, "distribution", missing)
    assert installation() == Installation(checkout=REPO, editable=True)


def test_this_checkout_is_found_where_the_tests_run():
    how = installation()
    if how.checkout is not None:  # the README installs it with pip install -e
        assert how.checkout.resolve() == REPO


# --------------------------------------------------------------------------- --engine ray

MODES = {
    "editable": (Installation(checkout=REPO, editable=True), 'pip install -e ".[ray]"'),
    "normal": (Installation(), 'pip install "veracity[ray]"'),
}


@pytest.fixture
def no_ray(monkeypatch):
    """`import ray` fails, as where the extra is not installed."""
    monkeypatch.setitem(sys.modules, "ray", None)


@pytest.fixture(params=sorted(MODES))
def mode(request, monkeypatch):
    how, command = MODES[request.param]
    monkeypatch.setattr(extras, "installation", lambda dist=None: how)
    monkeypatch.chdir(REPO)
    return command


def test_the_engine_helpers_say_how_to_install_ray(no_ray, mode):
    from veracity.evaluation.ray_engine import require_ray

    with pytest.raises(EngineError) as caught:
        require_ray()
    assert mode in str(caught.value)
    with pytest.raises(ConfigError) as flagged:
        engine_for("ray", None, 2, None)
    assert mode in str(flagged.value)


def test_eval_on_ray_without_ray_exits_2_before_creating_the_run(no_ray, mode, tmp_path):
    out = tmp_path / "runs" / "direct"
    args = ["eval", "--method", "direct", "--dataset", "liar", "--data-dir", str(DATA),
            "--limit", "2", "--out", str(out), "--engine", "ray", "--no-progress"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "--engine ray needs Ray" in message and mode in message
    assert "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()  # nothing left to block the retry


def test_batch_on_ray_without_ray_exits_2_before_creating_anything(no_ray, mode, tmp_path):
    src, out = tmp_path / "claims.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps({"text": "x"}) + "\n")
    result = runner.invoke(app, ["batch", str(src), "-o", str(out), "--engine", "ray"])
    assert result.exit_code == 2, result.output
    assert mode in " ".join(result.output.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims.jsonl"]  # no out, no .run


# --------------------------------------------------------------------------- other extras


def test_serve_without_its_extra_names_the_command_for_this_install(monkeypatch, mode):
    loaded = [m for m in sys.modules if m.split(".")[:2] == ["veracity", "server"]]
    for name in loaded:  # imported afresh, so that the missing FastAPI is noticed
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "fastapi", None)
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert f"the server needs its extra: {mode.replace('[ray]', '[server]')}" in message


def test_doctor_names_each_missing_extra_with_its_command(monkeypatch, mode):
    from veracity import doctor

    absent = {"fastapi", "ray", "spacy"}
    real = doctor.importlib.util.find_spec
    monkeypatch.setattr(
        doctor.importlib.util, "find_spec", lambda m: None if m in absent else real(m)
    )
    (finding,) = doctor._extras()
    assert finding.status == "warn"
    names = "fastapi (extra server), ray (extra ray), spacy (a dependency)"
    assert finding.detail == f"missing: {names}"
    server, ray = mode.replace("[ray]", "[server]"), mode
    plain = "pip install -e ." if "-e" in mode else "pip install veracity"
    assert finding.fix == f"{server}; {ray}; {plain}"
