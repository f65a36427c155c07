"""The isolated environment the cross-check runs upstream's scripts in, built from a lock file.

A venv under the Mnemetric cache folder (``crosscheck-env-<sha256 of the lock>``), created with
``python -m venv`` and ``pip install -r`` the lock (upstream's requirements-lite pins, plus httpx<0.28
for openai 1.35.1), reused when present; or any interpreter the caller names. Scripts run with
``python -I``; their stdout is returned for parsing (mnemetric.custody.crosscheck).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError, PluginError
from mnemetric.io import require_file, sha256_file

ENV_MARKER = "mnemetric-lock.sha256"
"""File in a built environment holding the sha256 of the lock it was built from."""

def read_lock(path: str | Path) -> dict[str, str]:
    """``name==version`` per line of a lock file ('#' comments and blank lines aside); anything
    not pinned with == is an InputError naming the line."""
    out: dict[str, str] = {}
    for n, text in enumerate(require_file(path).read_text(encoding="utf-8").splitlines(), start=1):
        req = text.split("#", 1)[0].strip()
        if not req:
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)", req)
        if not m:
            raise InputError(str(path), f"line {n}", "requirement", f"{req!r} is not pinned as name==version")
        out[_canonical(m[1])] = m[2]
    if not out:
        raise InputError(str(path), "<file>", "<file>", "no requirements")
    return out


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def env_python(env_dir: Path) -> Path:
    return env_dir / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def default_env_dir(lock: str | Path) -> Path:
    """<Mnemetric cache>/crosscheck-env-<sha256 of the lock file>."""
    from mnemetric.llm.cache import default_cache_dir
    return default_cache_dir() / f"crosscheck-env-{sha256_file(require_file(lock))}"


def ensure_env(lock: str | Path, env_dir: str | Path | None = None) -> Path:
    """The interpreter of a venv built from ``lock`` (``python -m venv`` + ``pip install -r``).

    Reused when its marker file holds the lock's sha256; a venv without it (an interrupted build)
    is removed and built again; any other existing folder is refused. Needs the package index
    only while building.
    """
    read_lock(lock)
    digest = sha256_file(lock)
    folder = Path(env_dir) if env_dir is not None else default_env_dir(lock)
    marker, python = folder / ENV_MARKER, env_python(folder)
    if marker.is_file() and marker.read_text().strip() == digest and python.exists():
        return python
    if folder.exists():
        if not (folder / "pyvenv.cfg").is_file():
            raise ConfigError("--env-dir", f"{folder} exists and is not a virtual environment; not touching it",
                              fix="pass a new folder (or remove this one yourself)")
        shutil.rmtree(folder)  # an interrupted or outdated build of ours
    _build_step([sys.executable, "-m", "venv", str(folder)], "python -m venv")
    _build_step([str(python), "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
                 "-r", str(lock)], "pip install -r")
    marker.write_text(digest + "\n")
    return python


def _build_step(cmd: Sequence[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n    ".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise ConfigError("crosscheck environment", f"{what} failed (exit {done.returncode}):\n    {tail}",
                          fix="check access to the package index, or pass --python with an interpreter "
                              "that has the lock's packages")


_DESCRIBE = """\
import json, sys
from importlib import metadata
names = json.loads(sys.argv[1])
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
print(json.dumps({"python": sys.version.split()[0], "packages": {n: version(n) for n in names}}))
"""


def describe_env(python: str | Path, lock: str | Path) -> dict[str, Any]:
    """Python version and the installed version of every package of the lock (None if absent)."""
    pins = read_lock(lock)
    done = subprocess.run([str(python), "-I", "-c", _DESCRIBE, json.dumps(sorted(pins))],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise ConfigError("--python", f"{python} could not be run (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    info = json.loads(done.stdout)
    return {"lock": Path(lock).name, "lock_sha256": sha256_file(lock), "python": info["python"],
            "packages": info["packages"], "matches_lock": info["packages"] == pins}


def _interpreter(python: str | Path) -> Path:
    """``--python`` as an absolute path (not resolved: a venv's python is a symlink that must stay one)."""
    text = str(python)
    found = shutil.which(text) if os.sep not in text and "/" not in text else text
    if not found or not Path(found).exists():
        raise ConfigError("--python", f"{text}: no such interpreter", fix="pass the path of a Python executable")
    return Path(found).absolute()


def run_script(python: str | Path, script: Path, args: Sequence[str | Path], timeout: float | None = None) -> str:
    """stdout of ``python -I script args`` (isolated: no PYTHONPATH, no user site); a crash is a PluginError."""
    cmd = [str(python), "-I", str(script.absolute()), *map(str, args)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=script.parent, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PluginError(f"upstream {script.name}", " ".join(cmd), f"did not finish within {timeout} s",
                          fix="check the endpoint (upstream retries failed requests forever)") from None
    if done.returncode != 0:
        tail = "\n    ".join(done.stderr.strip().splitlines()[-5:])
        raise PluginError(f"upstream {script.name}", " ".join(cmd), f"exited with status {done.returncode}:\n    {tail}")
    return done.stdout


# ------------------------------------------------------------------ parsing what upstream prints
