"""Starting the server: in the foreground (`veracity serve`) or on a background thread
(notebooks, tests, benchmarks)."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from fastapi import FastAPI

from veracity.core.netguard import check_bind
from veracity.server.settings import ServerSettings

PUBLIC_OPT_OUT = "--allow-public-without-token"


def check_public_bind(settings: ServerSettings, allow_public: bool = False) -> bool:
    """The rule every network front end keeps (`veracity.core.netguard.check_bind`): a
    non-loopback `settings.host` needs a token unless `allow_public`.

    Returns:
        True when the server will be public without a token (say so loudly).

    Raises:
        ConfigError: a non-loopback address without a token or the opt-out.
    """
    return check_bind(
        settings.host,
        has_token=settings.auth,
        allow_public=allow_public,
        how_to_set="Set VERACITY_SERVER_TOKEN",
        opt_out=PUBLIC_OPT_OUT,
    )


def serve(
    app: FastAPI,
    host: str,
    port: int,
    *,
    log_level: str = "info",
    allow_public_without_token: bool = False,
) -> None:
    """Run `app` until interrupted (Ctrl-C stops it cleanly; running checks end as
    interrupted and can be re-run).

    Raises:
        ConfigError: `host` is not a loopback address and the app has no token (unless
            `allow_public_without_token`).
    """
    settings = getattr(app.state, "settings", None) or ServerSettings()
    settings = settings.model_copy(update={"host": host})
    check_public_bind(settings, allow_public_without_token)
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
