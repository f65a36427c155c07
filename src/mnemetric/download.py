"""Obtain a pinned dataset file: resumable HTTP download, then sha256 + size verification.

URL scheme (as the Hugging Face tools use it): ``{HF_ENDPOINT}/datasets/{repo}/resolve/{revision}/{file}``,
``HF_ENDPOINT`` defaulting to https://huggingface.co and overridable (mirrors, tests). ``HF_TOKEN``,
when set, is sent as a bearer token and never written anywhere.

This module holds Mnemetric's one HTTP GET (:func:`http_get`: redirects followed, our User-Agent,
only the headers its caller adds). Two doors use it: :func:`fetch` (datasets: resumable, ``HF_TOKEN``)
and :func:`fetch_small` (a small upstream source file for :mod:`mnemetric.upstream.pinned`: read whole,
never a token, since a code host must never see ``HF_TOKEN``).

Bytes land in ``<downloads_dir>/<file>.part``; an interrupted transfer resumes with an HTTP Range
request. Only a file whose sha256 (and size, when pinned) match is renamed to ``<file>``; a
mismatch deletes the partial file and raises :class:`IntegrityError` with expected and actual hash.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
from tqdm import tqdm

from mnemetric.errors import DownloadError, IntegrityError
from mnemetric.io import sha256_file

DEFAULT_HF_ENDPOINT = "https://huggingface.co"
USER_AGENT = "mnemetric"


@contextlib.contextmanager
def http_get(url: str, *, timeout: float | httpx.Timeout,
             headers: Mapping[str, str] | None = None) -> Iterator[httpx.Response]:
    """The one HTTP GET: a streamed response (redirects followed) to read inside the ``with``.

    Sends ``User-Agent: mnemetric`` plus exactly ``headers`` (no token unless the caller adds one).
    httpx errors propagate: each caller turns them into its own DownloadError message.
    """
    with httpx.Client(follow_redirects=True, timeout=timeout) as client:
        with client.stream("GET", url, headers={"User-Agent": USER_AGENT, **(headers or {})}) as resp:
            yield resp


def fetch_small(url: str, *, timeout: float, fix: str) -> bytes:
    """GET a small file whole (status 200 only); any failure is a DownloadError ending with ``fix``.

    For small upstream source files (:func:`mnemetric.upstream.pinned.obtain`); it never sends
    ``HF_TOKEN``. ``timeout`` applies to connecting and to every read.
    """
    try:
        with http_get(url, timeout=timeout) as resp:
            if resp.status_code != 200:
                raise DownloadError(f"could not download {url}: HTTP {resp.status_code}\n  fix: {fix}")
            return resp.read()
    except httpx.HTTPError as exc:
        raise DownloadError(f"could not download {url}: {exc.__class__.__name__}: {exc}\n  fix: {fix}") from None


@dataclass(frozen=True)
class Pin:
    """What we expect to receive: where it lives and what its bytes hash to."""

    repo: str
    revision: str
    file: str
    sha256: str
    size: int | None = None

    def url(self, endpoint: str | None = None) -> str:
        base = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_HF_ENDPOINT).rstrip("/")
        return f"{base}/datasets/{self.repo}/resolve/{self.revision}/{self.file}"


def verify_file(path: Path, sha256: str, size: int | None) -> str:
    """Return the file's sha256 if it matches the pin; raise IntegrityError otherwise."""
    actual_size = path.stat().st_size
    if size is not None and actual_size != size:
        raise IntegrityError(f"{path}: size mismatch\n  expected size:   {size} bytes\n  actual size:     {actual_size} bytes")
    actual = sha256_file(path)
    if actual != sha256:
        raise IntegrityError(f"{path}: sha256 mismatch\n  expected sha256: {sha256}\n  actual sha256:   {actual}")
    return actual


def fetch(pin: Pin, downloads_dir: Path, *, endpoint: str | None = None, timeout: float = 60.0,
          progress: bool | None = None) -> Path:
    """Return a verified local copy of ``pin`` in ``downloads_dir``, downloading (or resuming) if needed."""
    downloads_dir.mkdir(parents=True, exist_ok=True)
    final = downloads_dir / pin.file
    final.parent.mkdir(parents=True, exist_ok=True)  # a pinned file may live in a subfolder
    if final.exists():
        verify_file(final, pin.sha256, pin.size)
        return final
    part = downloads_dir / (pin.file + ".part")
    url = pin.url(endpoint)
    _download(url, part, pin, timeout, progress)
    try:
        verify_file(part, pin.sha256, pin.size)
    except IntegrityError as exc:
        part.unlink(missing_ok=True)
        raise IntegrityError(f"downloaded {url}\n{exc}\n  the partial file was deleted; nothing was marked verified") from None
    os.replace(part, final)
    return final


def _headers(offset: int) -> dict[str, str]:
    """Range (when resuming) and the HF_TOKEN bearer header (when set), for :func:`http_get`."""
    headers = {}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    token = os.environ.get("HF_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _download(url: str, part: Path, pin: Pin, timeout: float, progress: bool | None) -> None:
    offset = part.stat().st_size if part.exists() else 0
    try:
        with http_get(url, timeout=httpx.Timeout(timeout, connect=15.0), headers=_headers(offset)) as resp:
            if resp.status_code == 416 and offset:  # already complete: let verification decide
                return
            if resp.status_code not in (200, 206):
                raise DownloadError(_status_message(url, resp.status_code))
            if resp.status_code == 200:
                offset = 0  # server ignored the Range header: start over
            total = _total_size(resp, offset, pin.size)
            _stream_to(part, resp, offset, total, progress)
    except httpx.HTTPError as exc:
        raise DownloadError(
            f"could not download {url}: {exc.__class__.__name__}: {exc}\n"
            f"  fix: check the network (or set HF_ENDPOINT to a reachable mirror) and rerun; a partial download "
            f"resumes where it stopped.\n  offline: obtain {pin.file} (revision {pin.revision}, sha256 {pin.sha256}) "
            f"elsewhere and place it at {part.parent / pin.file}"
        ) from None


def _total_size(resp: httpx.Response, offset: int, pinned: int | None) -> int | None:
    length = resp.headers.get("Content-Length")
    return offset + int(length) if length and length.isdigit() else pinned


def _stream_to(part: Path, resp: httpx.Response, offset: int, total: int | None, progress: bool | None) -> None:
    mode = "ab" if offset else "wb"
    with open(part, mode) as fh, tqdm(total=total, initial=offset, unit="B", unit_scale=True, unit_divisor=1024,
                                      desc=part.name.removesuffix(".part"), disable=None if progress is None else not progress) as bar:
        for chunk in resp.iter_bytes():  # as received: a broken transfer keeps what arrived
            fh.write(chunk)
            bar.update(len(chunk))
        fh.flush()
        os.fsync(fh.fileno())


def _status_message(url: str, status: int) -> str:
    hint = {
        401: "the dataset may need a token: set HF_TOKEN",
        403: "access denied: check HF_TOKEN and that you accepted the dataset's terms",
        404: "not found: check repo, revision and file in conf/variant/, and HF_ENDPOINT",
    }.get(status, "the server refused the request; retry later or set HF_ENDPOINT to a mirror")
    return f"could not download {url}: HTTP {status}\n  fix: {hint}"

