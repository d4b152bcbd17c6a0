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

    def add(self, url: str, data: bytes, *, break_at: list[int] | None = None) -> str:
        self.files[url] = data
        if break_at:
            self.break_after[url] = list(break_at)
        self.router.get(url).mock(side_effect=self._answer)
        return url

    def missing(self, url: str) -> None:
        self.router.get(url).mock(side_effect=lambda r: self._log(r, httpx.Response(404)))

    def refuse(self, url: str) -> None:
        def refuse(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            raise httpx.ConnectError("connection refused", request=request)

        self.router.get(url).mock(side_effect=refuse)

    def redirect(self, url: str, to: str) -> None:
        answer = httpx.Response(302, headers={"location": to})
        self.router.get(url).mock(side_effect=lambda r: self._log(r, answer))

    def _log(self, request: httpx.Request, response: httpx.Response) -> httpx.Response:
        self.requests.append(request)
        return response

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        url = str(request.url)
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
        return [r.headers.get("range") for r in self.requests if str(r.url) == url]
