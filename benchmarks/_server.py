"""What the server benchmarks share: waiting for a server started on 127.0.0.1."""

from __future__ import annotations

import time

import httpx


def wait_ready(base: str, path: str = "/readyz", seconds: float = 60.0, step: float = 0.1) -> None:
    """Return once GET `base` + `path` answers 200; exit the benchmark after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + path, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(step)
    raise SystemExit(f"the server at {base} did not answer {path} within {seconds:.0f} s")
