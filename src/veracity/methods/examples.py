"""In-context examples a method ships as YAML in its own package, read and validated once
(each method keeps its own example model and its own way of rendering them)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml
from pydantic import TypeAdapter


def read_examples(package: str, kind: Any, *path: str) -> Any:
    """The YAML file `path` (default ``examples.yaml``) of `package`, validated as `kind`
    (a model, or a type such as ``list[Example]``); a malformed file is a ValidationError
    naming the entry, never a silent default."""
    file = resources.files(package).joinpath(*(path or ("examples.yaml",)))
    return TypeAdapter(kind).validate_python(yaml.safe_load(file.read_text("utf-8")))
