"""Upstream LongMemEval ``src/evaluation/evaluate_qa.py`` as a pinned file: where it is and how to get it verified.

The judge's templates are read from this file at run time (:mod:`mnemetric.longmemeval.judge.upstream_prompts`);
it is obtained through the shared pinned-upstream-file service (:mod:`mnemetric.upstream`): a checkout
named by ``MNEMETRIC_LONGMEMEVAL_DIR``, else the cache, else a download, always verified by sha256 first.
Pin: xiaowu0162/LongMemEval @ 9e0b455f4ef0e2ab8f2e582289761153549043fc (shared/docs/upstream-protocol.md §3.2).
"""

from __future__ import annotations

from pathlib import Path

from mnemetric.upstream import DEFAULT_BASE_URL, PinnedFile, env_checkout, obtain, verify

UPSTREAM_REPO = "xiaowu0162/LongMemEval"
REVISION = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
PATH = "src/evaluation/evaluate_qa.py"
SHA256 = "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251"
ENV_CHECKOUT = env_checkout(UPSTREAM_REPO)  # "MNEMETRIC_LONGMEMEVAL_DIR"


# --------------------------------------------------------------------------- locating the file


def pinned_file(expected_sha256: str = SHA256) -> PinnedFile:
    """evaluate_qa.py @ REVISION as a :class:`mnemetric.upstream.PinnedFile` (tests pass a stand-in's hash)."""
    return PinnedFile(UPSTREAM_REPO, REVISION, PATH, expected_sha256)


def cached_path(cache_dir: Path, expected_sha256: str = SHA256) -> Path:
    """Where a verified download is kept: ``<cache_dir>/upstream/<sha256>/evaluate_qa.py``."""
    return pinned_file(expected_sha256).cache_path(cache_dir)


def upstream_url(base_url: str = DEFAULT_BASE_URL) -> str:
    """Raw-file URL of the pinned file: ``{base_url}/{repo}/{revision}/{path}``."""
    return pinned_file().url(base_url)


def verify_sha256(path: Path, expected_sha256: str = SHA256) -> str:
    """Return the file's sha256 if it equals ``expected_sha256``; raise IntegrityError otherwise."""
    verify(Path(path), pinned_file(expected_sha256),
           fix=f"the file is not the pinned upstream revision; check out {REVISION} "
               "(or delete a corrupted cached copy and let Mnemetric download it again)")
    return expected_sha256


def locate_evaluate_qa(checkout_dir: str | None, cache_dir: Path, download: bool = True,
                       base_url: str = DEFAULT_BASE_URL, *, expected_sha256: str = SHA256,
                       timeout: float = 60.0) -> Path:
    """Return a sha256-verified path to upstream ``evaluate_qa.py`` (see :func:`mnemetric.upstream.obtain`:
    checkout, else the cache ``<cache_dir>/upstream/<sha256>/evaluate_qa.py``, else a verified download)."""
    return obtain(pinned_file(expected_sha256), checkout_dir=checkout_dir, cache_dir=cache_dir,
                  download=download, base_url=base_url, timeout=timeout)
