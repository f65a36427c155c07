"""Read a file as it is at a git revision, branch, tag, DVC experiment name or in the workspace.

No checkout: git-tracked files come from ``git show <commit>:<path>``; DVC-tracked outputs (judged
files, retrieval logs) from ``dvc.api.read(path, rev=<commit>)``, which finds their bytes in the
local DVC cache through the ``dvc.lock`` of that commit. ``workspace`` means the files on disk.

Resolution of a name (:func:`resolve`): ``workspace``; else anything ``git rev-parse`` accepts as a
commit (branch, tag, sha, ``HEAD~1``); else a DVC experiment name, looked up among the refs DVC
keeps for experiments (``refs/exps/<baseline>/<name>``; the newest wins when two baselines hold
the same name). Every failure a user can cause (unknown revision, a file missing at a revision, a
DVC output not in the local cache, not a git repository) raises :class:`~mnemetric.errors.InputError`
naming the revision and the file, never a traceback.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError

WORKSPACE = "workspace"


@dataclass(frozen=True)
class Revision:
    """A resolved revision: what the user typed and the commit it names (None for the workspace)."""

    name: str
    commit: str | None
    kind: str
    """"workspace", "git" (branch, tag, sha) or "experiment"."""

    @property
    def short(self) -> str:
        return "workspace" if self.commit is None else self.commit[:7]


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise InputError(str(repo), "<repository>", "git", "the git command is not installed",
                         fix="install git") from None


def repo_root(repo: str | Path = ".") -> Path:
    """The top folder of the git repository holding ``repo``; InputError if there is none."""
    proc = _git(Path(repo), "rev-parse", "--show-toplevel")
    if proc.returncode != 0:
        raise InputError(str(repo), "<repository>", "git", "not inside a git repository",
                         fix="run the command from the project's git checkout (or pass --repo)")
    return Path(proc.stdout.strip())


def experiment_refs(repo: str | Path = ".") -> dict[str, str]:
    """DVC experiment name -> commit, from ``refs/exps/**`` (newest commit first wins)."""
    proc = _git(Path(repo), "for-each-ref", "--sort=-committerdate", "--format=%(refname) %(objectname)",
                "refs/exps")
    out: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        ref, _, sha = line.partition(" ")
        parts = ref.split("/")
        if len(parts) >= 5 and parts[2] != "exec" and parts[-1] not in out:  # refs/exps/ab/<rest>/<name>
            out[parts[-1]] = sha
    return out


def resolve(name: str, repo: str | Path = ".") -> Revision:
    """``name`` as a :class:`Revision`; InputError naming it if git and DVC both do not know it."""
    if name == WORKSPACE:
        return Revision(name, None, "workspace")
    root = repo_root(repo)
    proc = _git(root, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
    if proc.returncode == 0:
        return Revision(name, proc.stdout.strip(), "git")
    exps = experiment_refs(root)
    if name in exps:
        return Revision(name, exps[name], "experiment")
    known = sorted(exps)
    raise InputError(name, "<revision>", "revision", "neither a git revision (branch, tag, commit) nor a DVC "
                     "experiment name" + (f"; experiments here: {', '.join(known)}" if known else ""),
                     fix="`git branch -a`, `dvc exp list --all-commits` or `mnemetric runs` list the names")


def _where(rev: Revision, path: str) -> str:
    return path if rev.commit is None else f"{rev.name}:{path}"


def _dvc_read(root: Path, rev: Revision, path: str) -> str:
    """A DVC-tracked output at a commit, from the local cache (dvc.api)."""
    try:
        import dvc.api
        from dvc.exceptions import DvcException
    except ImportError:
        raise InputError(_where(rev, path), "<file>", "<file>", "not tracked by git, and dvc is not installed",
                         fix="pip install dvc") from None
    try:
        return dvc.api.read(path, repo=str(root), rev=rev.commit, mode="r", encoding="utf-8")
    except (DvcException, FileNotFoundError, OSError, ValueError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(_where(rev, path), "<file>", "<file>",
                         f"not in git at {rev.name} ({rev.short}) and not readable as a DVC output there ({detail})",
                         fix="check the path; an output missing from the local cache needs `dvc pull` or a rerun "
                             "of that revision (`dvc exp apply` / `dvc repro`)") from None


def read_text(rev: Revision, path: str, repo: str | Path = ".") -> str:
    """The text of ``path`` (relative to the repository root) at ``rev``."""
    if rev.commit is None:
        file = Path(repo) / path
        if not file.is_file():
            raise InputError(path, "<file>", "<file>", "no such file in the workspace",
                             fix="run the stage that writes it (`dvc repro`) or compare committed revisions")
        return file.read_text(encoding="utf-8")
    root = repo_root(repo)
    proc = _git(root, "show", f"{rev.commit}:{path}")
    if proc.returncode == 0:
        return proc.stdout
    return _dvc_read(root, rev, path)


def exists(rev: Revision, path: str, repo: str | Path = ".") -> bool:
    """True if ``path`` can be read at ``rev`` (git or DVC)."""
    try:
        read_text(rev, path, repo)
    except InputError:
        return False
    return True


def read_json(rev: Revision, path: str, repo: str | Path = ".") -> Any:
    """``path`` at ``rev`` parsed as JSON; InputError naming the revision and file if it is not JSON."""
    text = read_text(rev, path, repo)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(_where(rev, path), f"line {exc.lineno}", "<json>", f"not valid JSON ({exc.msg})") from None


def read_yaml(rev: Revision, path: str, repo: str | Path = ".") -> Any:
    """``path`` at ``rev`` parsed as YAML; InputError naming the revision and file if it is not YAML."""
    import yaml

    text = read_text(rev, path, repo)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(_where(rev, path), "<file>", "<yaml>", f"not valid YAML ({exc})") from None


def branches(repo: str | Path = ".") -> list[tuple[str, str]]:
    """(branch name, commit) of every local branch, sorted by name."""
    proc = _git(repo_root(repo), "for-each-ref", "--sort=refname", "--format=%(refname:short) %(objectname)",
                "refs/heads")
    return [tuple(line.split(" ", 1)) for line in proc.stdout.splitlines() if " " in line]  # type: ignore[misc]
