"""Recorded release servers for the `veracity datasets get` tests (no network).

`ReleaseServer` answers like S3 and raw.githubusercontent.com do: 200 with Content-Length
for a plain GET, 206 with Content-Range for a Range request (or 200, when told to ignore
Range), and can break a body half-way, refuse connections, or answer 404. Archives are
built in the test from the miniature fixtures in tests/data/datasets.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import httpx
import respx

FIX = Path(__file__).resolve().parents[1] / "data" / "datasets"
PUBLIC = "93.184.215.14"


async def public_dns(host: str, port: int) -> list[str]:
    """Every host name resolves to one public address (the guard's resolver in tests)."""
    return [PUBLIC]


def logical_url(request: httpx.Request) -> str:
    """The URL a request was for: the fetcher sends it to the checked address, with the
    host name in the Host header."""
    path = request.url.raw_path.decode("ascii")
    return f"{request.url.scheme}://{request.headers['host']}{path}"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tar_gz(files: dict[str, bytes], mode: str = "w:gz") -> bytes:
    """A tar archive (gz by default) holding `files` (name -> bytes)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


class _Broken(httpx.SyncByteStream):
    """A body that sends `data` and then fails, as a dropped connection does."""

    def __init__(self, data: bytes):
        self.data = data

    def __iter__(self):
        yield self.data
        raise httpx.ReadError("connection reset by peer")


class ReleaseServer:
    """Serves release files through a respx router, recording every request.

    Args:
        router: an active respx router.
    """

    def __init__(self, router: respx.MockRouter):
        self.router = router
        self.requests: list[httpx.Request] = []
        self.files: dict[str, bytes] = {}
        self.break_after: dict[str, list[int]] = {}  # url -> byte counts to break at, in turn
        self.ignore_range: set[str] = set()
        self.handlers: dict[str, object] = {}
        # one route for everything: the fetcher connects to the address its guard checked
        # (`public_dns`), so a request is matched by its Host header and path, not its URL
        router.route().mock(side_effect=self._dispatch)

    def add(self, url: str, data: bytes, *, break_at: list[int] | None = None) -> str:
        self.files[url] = data
        if break_at:
            self.break_after[url] = list(break_at)
        self.handlers[url] = self._answer
        return url

    def missing(self, url: str) -> None:
        self.handlers[url] = lambda r: self._log(r, httpx.Response(404))

    def refuse(self, url: str) -> None:
        def refuse(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            raise httpx.ConnectError("connection refused", request=request)

        self.handlers[url] = refuse

    def redirect(self, url: str, to: str) -> None:
        answer = httpx.Response(302, headers={"location": to})
        self.handlers[url] = lambda r: self._log(r, answer)

    def _dispatch(self, request: httpx.Request) -> httpx.Response:
        url = logical_url(request)
        if url not in self.handlers:
            raise AssertionError(f"no release is served at {url} (sent to {request.url})")
        return self.handlers[url](request)  # type: ignore[operator]

    def _log(self, request: httpx.Request, response: httpx.Response) -> httpx.Response:
        self.requests.append(request)
        return response

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        url = logical_url(request)
        data, start = self.files[url], 0
        rng = request.headers.get("range")
        if rng and url not in self.ignore_range:
            start = int(rng.removeprefix("bytes=").split("-")[0])
            if start >= len(data):
                return httpx.Response(416)
        body = data[start:]
        headers = {"content-length": str(len(body))}
        status = 200
        if start:
            status = 206
            headers["content-range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        cuts = self.break_after.get(url)
        if cuts:
            return httpx.Response(status, headers=headers, stream=_Broken(body[: cuts.pop(0)]))
        return httpx.Response(status, headers=headers, content=body)

    def ranges(self, url: str) -> list[str | None]:
        """The Range header of each request for `url`, in order."""
        return [r.headers.get("range") for r in self.requests if logical_url(r) == url]
