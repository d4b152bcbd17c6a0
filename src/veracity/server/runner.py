"""Starting the server: in the foreground (`veracity serve`) or on a background thread
(notebooks, tests, benchmarks)."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from fastapi import FastAPI


def serve(app: FastAPI, host: str, port: int, *, log_level: str = "info") -> None:
    """Run `app` until interrupted (Ctrl-C stops it cleanly; running checks end as
    interrupted and can be re-run)."""
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=10)


class BackgroundServer:
    """`app` served by uvicorn on a thread of its own, on a free loopback port.

    Example:
        >>> with BackgroundServer(create_app(...)) as server:
        ...     httpx.get(server.url + "/healthz")
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0):
        self.host = host
        self.port = port or _free_port(host)
        config = uvicorn.Config(
            app, host=self.host, port=self.port, log_level="warning", lifespan="on",
            timeout_graceful_shutdown=5,
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, name="veracity-server")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start on {self.url}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
