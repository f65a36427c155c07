"""Validate a LongMemEval-V2 data root: every problem, named by file, record and field.

At least as strict as upstream (xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd:
data/validate_data.py → data/public_data.py validate_public_data, lines 223-253, plus the checks
evaluation/harness.py main makes when a run starts, lines 1094-1107, and those
memory_modules/trajectory_store.py makes on every inserted trajectory):

- every question has a haystack entry and every haystack key is a question;
- question: domain web|enterprise, non-empty text, image null or an existing file, id / question_type
  / eval_function non-empty strings, answer a string, ids unique, question_type a known type,
  llm_abstention_checker only with an "-abs" type (questions.py);
- trajectory ids unique and non-empty; row fields as trajectory_store requires (trajectories.py);
- haystack: an object of non-empty lists of non-empty ids, no id twice in one list, every id an
  existing trajectory of the question's domain;
- every state's screenshot exists relative to the data root.

Ours besides, for every image a run would read (question images, state screenshots, with images on): the
path, symlinks resolved, stays inside the data root (a screenshot linked to a file elsewhere is refused, the
file named); a ``.png`` file starts with the PNG signature and a ``.jpg`` / ``.jpeg`` one with the JPEG one
(a text file posing as a PNG is refused). Upstream checks existence only.

Ours besides: NaN/Infinity, a UTF-8 BOM, non-UTF-8 bytes, empty files and keys given twice
(jsonfiles.py); eval_function specs that would fail when scoring; image / screenshot paths that are
absolute or contain "..". Images: with ``check_images=False`` neither question images nor state
screenshots must exist (their paths are still checked). Upstream's ``--no-check-screenshots`` skips
only the state screenshots: question images must always exist (validate_public_data calls
resolve_question_image unconditionally, and so does run_eval's materialize_runtime_questions), and
the indexing backends (rag, agentrunbook_r, codex, …) resolve every state's screenshot when they
insert a trajectory, so upstream cannot run those backends without the screenshots.

Problems are capped (``max_problems``); a last entry then says how many more were found.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mnemetric.errors import Problem, ValidationFailed
from mnemetric.longmemeval_v2.haystacks import TIERS, check_haystack, haystack_file
from mnemetric.longmemeval_v2.jsonfiles import Row, data_path_problem, load_json, scan_jsonl
from mnemetric.longmemeval_v2.questions import DOMAINS, check_question
from mnemetric.longmemeval_v2.questions import record_name as question_name
from mnemetric.longmemeval_v2.trajectories import check_trajectory, is_legacy
from mnemetric.longmemeval_v2.trajectories import record_name as trajectory_name

MAX_PROBLEMS = 1000
QUESTIONS_FILE = "questions.jsonl"
TRAJECTORIES_FILE = "trajectories.jsonl"


class _Problems:
    """Collects problems up to a cap and counts the rest."""

    def __init__(self, cap: int):
        self.cap, self.total, self.items = cap, 0, []

    def add(self, *problems: Problem) -> None:
        for problem in problems:
            self.total += 1
            if len(self.items) < self.cap:
                self.items.append(problem)

    def result(self) -> list[Problem]:
        if self.total <= self.cap:
            return list(self.items)
        return [*self.items, Problem("<all files>", "-", "-", f"{self.total - self.cap} more problem(s) not listed "
                                     f"(the first {self.cap} of {self.total} are shown)")]


def haystack_path(root: str | Path, haystack: str | Path) -> Path:
    """A tier name (small, medium) → root/haystacks/lme_v2_<tier>.json; anything else is a file path."""
    if isinstance(haystack, str) and haystack in TIERS:
        return Path(root) / haystack_file(haystack)
    return Path(haystack)


def validate_root(root: str | Path, haystack: str | Path = "small", *, check_images: bool,
                  max_problems: int = MAX_PROBLEMS) -> list[Problem]:
    """Every problem of the data root ``root`` for one haystack (a tier name or a haystack file)."""
    root = Path(root)
    if not root.is_dir():
        return [Problem(str(root), "<root>", "<root>", "is not a folder (expected a LongMemEval-V2 data root)")]
    out = _Problems(max_problems)
    questions = _scan_questions(root, out, check_images)
    trajectories = _scan_trajectories(root, out, check_images)
    _check_haystack_file(haystack_path(root, haystack), questions, trajectories, out)
    return out.result()


def require_valid_root(root: str | Path, haystack: str | Path = "small", *, check_images: bool) -> None:
    """validate_root for pipelines: raise ValidationFailed listing the problems, if any."""
    problems = validate_root(root, haystack, check_images=check_images)
    if problems:
        raise ValidationFailed(str(root), problems)


def _rows(path: Path, out: _Problems) -> Iterator[Row]:
    for item in scan_jsonl(path):
        if isinstance(item, Problem):
            out.add(item)
        else:
            yield item


IMAGE_SIGNATURES = {".png": (b"\x89PNG\r\n\x1a\n",), ".jpg": (b"\xff\xd8\xff",), ".jpeg": (b"\xff\xd8\xff",)}
"""The first bytes an image file of each name ending must start with (PNG signature; JPEG start-of-image)."""


def image_problem(root: Path, rel: str) -> str | None:
    """Why the image ``rel`` under ``root`` cannot be used (missing; resolves outside the root, e.g. through a
    symlink; bytes that are not the format its name says), or None."""
    path = root / rel
    if not path.is_file():
        return f"not found under {root} (prepare the screenshots, or validate without images)"
    real, base = path.resolve(), root.resolve()
    if real != base and base not in real.parents:
        return f"resolves to {real}, outside the data root {base} (a symlink that leaves the root): refused"
    wanted = IMAGE_SIGNATURES.get(path.suffix.lower())
    if wanted is not None:
        with open(path, "rb") as fh:
            head = fh.read(8)
        if not head.startswith(wanted):
            return (f"is not a {path.suffix.lower().lstrip('.').upper()} image (its first bytes are {head!r}, not the "
                    "format's signature): refused")
    return None


def _missing_file(root: Path, rel: str, file: str, record: str, fld: str, what: str) -> Problem | None:
    why = image_problem(root, rel)
    return None if why is None else Problem(file, record, fld, f"{what} {rel!r} {why}")


def _scan_questions(root: Path, out: _Problems, check_images: bool) -> dict[str, Any] | None:
    """Check each row; return question id → domain (first row wins), None if the file is unreadable."""
    path = root / QUESTIONS_FILE
    if not path.is_file():
        out.add(Problem(str(path), "<file>", "<file>", "does not exist"))
        return None
    file, domains = str(path), {}
    for row in _rows(path, out):
        out.add(*check_question(row.value, file=file, line=row.line))
        raw, name = row.value, question_name(row.value, row.line)
        if not isinstance(raw, dict) or not (isinstance(raw.get("id"), str) and raw["id"]):
            continue
        if raw["id"] in domains:
            out.add(Problem(file, name, "id", f"duplicate question id (line {row.line}); ids must be unique"))
            continue
        domains[raw["id"]] = raw.get("domain") if raw.get("domain") in DOMAINS else None  # bad: reported already
        image = raw.get("image")
        if check_images and isinstance(image, str) and image.strip() and data_path_problem(image) is None:
            if (problem := _missing_file(root, image, file, name, "image", "question image")) is not None:
                out.add(problem)
    return domains


def _screenshots(raw: dict) -> Iterator[tuple[str, str]]:
    """(field, path) of every well-formed screenshot path of a raw trajectory row."""
    if is_legacy(raw):
        states = raw.get("content") if isinstance(raw.get("content"), list) else []
        for i, s in enumerate(states):
            obs = s.get("observation") if isinstance(s, dict) else None
            value = obs.get("screenshot") if isinstance(obs, dict) else None
            if isinstance(value, str) and value.strip() and data_path_problem(value) is None:
                yield f"content[{i}].observation.screenshot", value
        return
    states = raw.get("states") if isinstance(raw.get("states"), list) else []
    for i, s in enumerate(states):
        value = s.get("screenshot") if isinstance(s, dict) else None
        if isinstance(value, str) and value.strip() and data_path_problem(value) is None:
            yield f"states[{i}].screenshot", value


def _scan_trajectories(root: Path, out: _Problems, check_images: bool) -> dict[str, Any] | None:
    """Check each row (streamed); return trajectory id → domain, None if the file is unreadable."""
    path = root / TRAJECTORIES_FILE
    if not path.is_file():
        out.add(Problem(str(path), "<file>", "<file>", "does not exist"))
        return None
    file, domains = str(path), {}
    for row in _rows(path, out):
        raw, name = row.value, trajectory_name(row.value, row.line)
        out.add(*check_trajectory(raw, file=file, line=row.line))
        if not isinstance(raw, dict) or not (isinstance(raw.get("id"), str) and raw["id"]):
            continue
        if raw["id"] in domains:
            out.add(Problem(file, name, "id", f"duplicate trajectory id (line {row.line}); ids must be unique"))
            continue
        domains[raw["id"]] = raw.get("domain") if raw.get("domain") in DOMAINS else None
        if check_images:
            for fld, rel in _screenshots(raw):
                if (problem := _missing_file(root, rel, file, name, fld, "screenshot")) is not None:
                    out.add(problem)
    return domains


def _check_haystack_file(path: Path, questions: dict | None, trajectories: dict | None, out: _Problems) -> None:
    raw, problems = load_json(path)
    out.add(*problems)
    if problems:
        return
    file = str(path)
    shape = check_haystack(raw, file=file)
    out.add(*shape)
    if shape and not isinstance(raw, dict):
        return
    if questions is not None:
        out.add(*(Problem(file, q, "<key>", f"no question {q!r} in {QUESTIONS_FILE}") for q in raw if q not in questions))
        out.add(*(Problem(file, q, "<key>", f"question {q!r} has no haystack entry") for q in questions if q not in raw))
    if trajectories is None:
        return
    for qid, ids in raw.items():
        qdomain = questions.get(qid) if questions else None
        for i, tid in enumerate(ids if isinstance(ids, list) else []):
            if not isinstance(tid, str) or not tid:
                continue
            if tid not in trajectories:
                out.add(Problem(file, qid or "<empty key>", f"[{i}]", f"unknown trajectory {tid!r} (not in {TRAJECTORIES_FILE})"))
            elif None not in (qdomain, trajectories[tid]) and trajectories[tid] != qdomain:
                out.add(Problem(file, qid, f"[{i}]", f"trajectory {tid!r} is from domain {trajectories[tid]!r}, "
                                f"the question from {qdomain!r} (cross-domain haystack)"))
