"""Every error veracity raises on purpose, in one public module.

Import them from here (``from veracity.core.errors import ConfigError``); the modules that
raise them re-export their own for compatibility. This module imports nothing from
veracity, so every layer may use it.

Families:
- configuration and input: `ConfigError`, `InputError`, `LabelError`, `RegistryError`,
  `MethodConfigError`, `PromptError`, `DatasetError`, `EvalError`;
- models: `LLMError` and its kinds (transient faults are retried, the rest are not);
- evidence sources: `SourceError` and its kinds (never swallowed into an empty result);
- stores: `RunStoreError`, `EvidenceMemoryError`, `MetricsError`, and `StorageError`
  (a damaged, read-only, full or failing file, whatever the store);
- engines: `EngineError` (a run's workers cannot be started or keep dying).

`problem_text` is the one way an error (a pydantic validation error included) becomes
text, for every layer and front end.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration that cannot be used, with a message saying what to change."""


class LLMError(RuntimeError):
    """Base class of LLM-layer errors."""


class LLMTransientError(LLMError):
    """A fault worth retrying: timeout, rate limit, server error, dropped connection."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class LLMTimeout(LLMTransientError):
    """No reply within the request's time limit.

    Attributes:
        timeout_s: the limit that ran out, when known.
        local: the backend runs on this machine (a retry starts the reply over).
    """

    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        *,
        timeout_s: float | None = None,
        local: bool = False,
    ):
        super().__init__(message, retry_after)
        self.timeout_s = timeout_s
        self.local = local


class LLMRateLimited(LLMTransientError):
    pass


class LLMServerError(LLMTransientError):
    pass


class LLMBadReply(LLMServerError):
    """The backend answered, but not with a usable chat completion (a body of the wrong
    shape, a missing token, a log-probability that is not a finite number <= 0).
    Retried like a server fault; never cached."""


class LLMAuthError(LLMError):
    """Missing or rejected credentials. Not retried."""


class LLMRequestError(LLMError):
    """The backend rejected the request as malformed (HTTP 4xx other than 401/403/429)."""


class ModelNotAvailable(LLMError):
    """The configured model file or name cannot be found or fetched."""


class CacheMiss(LLMError):
    """Replay mode found no recorded response for a request."""


class StructuredOutputError(LLMError):
    """The model did not produce valid structured output within the allowed attempts."""

    def __init__(self, message: str, attempts: list[str]):
        super().__init__(message)
        self.attempts = attempts


class SourceError(RuntimeError):
    """Base class of source failures. Never swallowed into an empty result."""

    def __init__(self, source: str, message: str):
        super().__init__(f"{source}: {message}")
        self.source = source


class SourceAuthError(SourceError):
    """Missing or rejected credentials."""


class SourceRateLimited(SourceError):
    def __init__(self, source: str, message: str, retry_after: float | None = None):
        super().__init__(source, message)
        self.retry_after = retry_after


class SourceUnreachable(SourceError):
    """Network failure, timeout or a 5xx from the service."""


class SourceBadResponse(SourceError):
    """The service answered with something that is not what its API promises."""


class InputError(ValueError):
    """Raised when a check input is empty, too long or otherwise unusable."""


class LabelError(ValueError):
    """A label that does not belong to the space it was given for, or an unmapped label."""


class DatasetError(ValueError):
    """Missing files, unknown splits or malformed records, with the path and line."""


class MethodConfigError(ValueError):
    """A method config that does not validate."""


class RequestOptionError(MethodConfigError):
    """Method options a request may not set (`veracity.methods.options`), or a value of
    the wrong type for one it may.

    Attributes:
        refused: the options refused.
        allowed: the options a request may set for that method.
    """

    def __init__(
        self, message: str, refused: list[str] | tuple[str, ...] = (), allowed: tuple[str, ...] = ()
    ):
        super().__init__(message)
        self.refused = list(refused)
        self.allowed = list(allowed)


class RegistryError(LookupError):
    """An unknown name, or a name registered twice with different objects."""


class PromptError(LookupError):
    """A template that does not exist or does not render."""


class EvalError(ValueError):
    """A run that cannot start, with a message saying what to change."""


class RunStoreError(RuntimeError):
    """A run directory that cannot be read or does not match the requested run."""


class DirLocked(RuntimeError):
    """A directory another process holds (a run directory, the server's data directory);
    the message names the holder's pid, host and start time."""


class MetricsError(ValueError):
    """Inputs that metrics cannot be computed from (mismatched lengths, empty sets)."""


class EvidenceMemoryError(RuntimeError):
    """The memory database cannot be opened or used (path, permissions, corruption)."""


class StorageError(RuntimeError):
    """A file veracity keeps cannot be used: it is damaged (or not a database), its folder
    is read-only, the disk is full, or the device fails. The message names the file and
    what to do (`veracity.core.storage`).

    Attributes:
        path: the file.
        kind: ``corrupt``, ``read-only``, ``full`` or ``io``.
        fix: what to do (also the end of the message).
    """

    def __init__(self, message: str, *, path: object = None, kind: str = "io", fix: str = ""):
        super().__init__(message)
        self.path = path
        self.kind = kind
        self.fix = fix


class EngineError(RuntimeError):
    """An engine cannot run the work: Ray is not installed, the cluster cannot hold the
    workers asked for, or worker processes keep dying."""


# ----------------------------------------------------------------- telling errors


def problems(exc: BaseException, *, unknown: str | None = None) -> list[dict[str, str]]:
    """Each fault of a validation error (pydantic's, or FastAPI's request validation) as
    ``{"loc", "msg", "type"}``: the field path dotted, pydantic's ``Value error, `` prefix
    dropped, and `unknown` (when given) as the message of a key the model does not take.
    Empty for any other exception."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return []
    out = []
    for err in errors():
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        if unknown is not None and err.get("type") == "extra_forbidden":
            msg = unknown
        loc = ".".join(str(p) for p in err.get("loc", ()))
        out.append({"loc": loc, "msg": msg, "type": str(err.get("type", ""))})
    return out


def problem_text(
    exc: BaseException,
    *,
    where: bool = True,
    limit: int | None = None,
    unknown: str | None = None,
) -> str:
    """The one way veracity tells an error as text: a validation error as
    ``field.path: message`` parts joined by ``; `` (no pydantic boilerplate), anything
    else as its message.

    Args:
        exc: the error.
        where: put the field path before each message (off for input given as plain text,
            whose one field the user never named).
        limit: tell at most this many faults.
        unknown: the message for a key the model does not take (see `problems`).
    """
    found = problems(exc, unknown=unknown)
    if not found:
        return str(exc)
    parts = [f"{p['loc']}: {p['msg']}" if where and p["loc"] else p["msg"] for p in found]
    return "; ".join(parts[:limit])
