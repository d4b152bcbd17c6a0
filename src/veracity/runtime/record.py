"""The run record: the one file (``run.json``) a run directory resumes, reports and runs
again from.

Format 1::

    {"format": 1,
     "veracity": "0.1.0",               the package version that wrote it (null: unknown)
     "source_revision": "acbda6b…",     the checkout's commit, when it ran from one
     "prompt_hashes": {"direct.j2": …}, template -> hash of each prompt the method renders
     "config": {…},                     the run config as given: file, variant and flags
                                        layered, default sources and label space filled in
     "spec": {…} | null}                the effective run (`RunSpec`), every default filled in

Why both parts: `config` is what the user asked for, and the only place that keeps what a
spec drops — the experiment's name, variants and paper table (the report prints the
paper's rows beside the run's) — so resuming re-plans it and a resumed run compares it
(`veracity.evaluation.prepare.check_resumable`); `spec` is what ran, with the defaults of
the version that ran it, so ``veracity eval --spec RUN_DIR`` runs exactly that again. A
repeated run's parent directory holds only `config` (its repeats hold the runs). Both are
written together, by `RunStore.write_record`, so they cannot drift apart.

Older run directories still read (`read_record`), each layout by its own files:

- ``config.yaml`` + ``spec.json`` (+ ``prompts.json``): runs written while the spec was
  recorded beside the config (``tests/data/old_run_acbda6b`` is one);
- ``config.yaml`` (+ ``prompts.json``) only: runs made before specs were recorded; they
  have no spec (`read_spec` says how to run them again). The oldest kept the label space
  in ``method_config.labels``; it is read as the run's ``labels``, its one home now.

The next session on such a directory writes ``run.json`` and removes the older files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from veracity.core.errors import RunStoreError
from veracity.runtime.provenance import package_version, source_revision

RECORD_FILE = "run.json"
FORMAT = 1  # the record's format; a later format reads older ones or says it cannot
# the files of older layouts (read, never written; removed once run.json is written)
LEGACY_CONFIG, LEGACY_SPEC, LEGACY_PROMPTS = "config.yaml", "spec.json", "prompts.json"
LEGACY_FILES = (LEGACY_CONFIG, LEGACY_SPEC, LEGACY_PROMPTS)


@dataclass(frozen=True)
class RunRecord:
    """A run directory's record, as read (any layout).

    Attributes:
        config: the run config as given (see the module's docstring).
        spec: the effective run as JSON (`RunSpec.from_json` reads it); None when the run
            was made before specs were recorded, or in a repeated run's parent.
        prompt_hashes: template name -> hash of the text the method renders.
        veracity: the package version that wrote it (None: unknown or not recorded).
        source_revision: the checkout's commit, when recorded.
        layout: which files it was read from: ``run.json``, ``config.yaml + spec.json``
            or ``config.yaml``.
        path: the file that holds the spec (``run.json`` or ``spec.json``), else the
            config's.
    """

    config: dict[str, Any]
    spec: dict[str, Any] | None
    prompt_hashes: dict[str, str] = field(default_factory=dict)
    veracity: str | None = None
    source_revision: str | None = None
    layout: str = RECORD_FILE
    path: Path = Path(RECORD_FILE)


def make_record(
    config: dict[str, Any], spec: dict[str, Any] | None, prompt_hashes: dict[str, str]
) -> dict[str, Any]:
    """The ``run.json`` content of a run (secrets not yet removed: the store does that).

    Args:
        config: the run config as JSON (``RunConfig.model_dump(mode="json")``).
        spec: the effective run as JSON (``RunSpec.model_dump(mode="json")``), or None.
        prompt_hashes: template name -> hash.
    """
    record: dict[str, Any] = {"format": FORMAT, "veracity": package_version()}
    revision = source_revision()
    if revision is not None:
        record["source_revision"] = revision
    record["prompt_hashes"] = dict(sorted(prompt_hashes.items()))
    record["config"] = config
    record["spec"] = spec
    return record


def has_record(run_dir: str | Path) -> bool:
    """Whether `run_dir` holds a run record of any layout."""
    folder = Path(run_dir)
    return (folder / RECORD_FILE).is_file() or (folder / LEGACY_CONFIG).is_file()


def read_record(run_dir: str | Path) -> RunRecord:
    """The record of `run_dir`: ``run.json``, else an older layout (see the module).

    Raises:
        RunStoreError: no record, a file that cannot be read or does not hold what its
            layout holds, or a format newer than this version reads.
    """
    folder = Path(run_dir)
    path = folder / RECORD_FILE
    if path.is_file():
        return _read_current(path)
    if (folder / LEGACY_CONFIG).is_file():
        return _read_legacy(folder)
    raise RunStoreError(f"{folder} is not a run directory (no {RECORD_FILE})")


def _read_current(path: Path) -> RunRecord:
    data = _json(path)
    version = data.get("format")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RunStoreError(f"{path}: not a run record (no format number)")
    if version > FORMAT:
        raise RunStoreError(
            f"{path}: a run record of format {version}, written by a newer veracity "
            f"({data.get('veracity') or 'unknown version'}); this one reads format {FORMAT} "
            "and older: upgrade veracity to read it"
        )
    config, spec = data.get("config"), data.get("spec")
    if not isinstance(config, dict) or not (spec is None or isinstance(spec, dict)):
        raise RunStoreError(f"{path}: `config` must be a mapping and `spec` a mapping or null")
    return RunRecord(
        config=config,
        spec=spec,
        prompt_hashes=_hashes(data.get("prompt_hashes"), path),
        veracity=data.get("veracity"),
        source_revision=data.get("source_revision"),
        layout=RECORD_FILE,
        path=path,
    )


def _read_legacy(folder: Path) -> RunRecord:
    config_path = folder / LEGACY_CONFIG
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise RunStoreError(f"{config_path}: not valid YAML: {exc}") from exc
    if not isinstance(config, dict):
        raise RunStoreError(f"{config_path}: the top level must be a mapping")
    mcfg = config.get("method_config")
    if isinstance(mcfg, dict) and "labels" in mcfg:  # written when the method held the space
        labels = mcfg.pop("labels")
        config["labels"] = config.get("labels") or labels
    prompts_path = folder / LEGACY_PROMPTS
    hashes = _hashes(_json(prompts_path), prompts_path) if prompts_path.is_file() else {}
    spec_path = folder / LEGACY_SPEC
    if not spec_path.is_file():
        return RunRecord(config, None, hashes, layout=LEGACY_CONFIG, path=config_path)
    data = _json(spec_path)
    spec = data.get("spec")
    if not isinstance(spec, dict):
        raise RunStoreError(f"{spec_path}: no `spec` mapping in it")
    return RunRecord(
        config=config,
        spec=spec,
        prompt_hashes=_hashes(data.get("prompts", hashes), spec_path),
        veracity=data.get("veracity_version"),
        source_revision=data.get("source_revision"),
        layout=f"{LEGACY_CONFIG} + {LEGACY_SPEC}",
        path=spec_path,
    )


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunStoreError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise RunStoreError(f"{path}: the top level must be a mapping")
    return data


def _hashes(value: Any, path: Path) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise RunStoreError(f"{path}: the prompt hashes must map template names to hashes")
    return {str(k): v for k, v in value.items()}


__all__ = [
    "FORMAT",
    "LEGACY_FILES",
    "RECORD_FILE",
    "RunRecord",
    "has_record",
    "make_record",
    "read_record",
]
