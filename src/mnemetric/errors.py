"""The error family for problems a user can fix.

Every user-facing error names *where* the problem is (file, record, field), *what* is wrong,
and, where we know it, *how to fix it*. The CLI and the stage entry points print these as one
clean message and exit non-zero; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


class MnemetricError(Exception):
    """Base class: a problem with input, configuration or environment that the user can fix."""

    exit_code = 2


@dataclass(frozen=True)
class Problem:
    """One problem found in one record of one file."""

    file: str
    record: str
    """question_id when known, else "index N" / "line N"."""
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.record}: field '{self.field}': {self.message}"


class InputError(MnemetricError):
    """Bad input data: names file, record and field."""

    def __init__(self, file: str, record: str, field: str, message: str, fix: str | None = None):
        self.problem = Problem(str(file), record, field, message)
        self.fix = fix
        text = str(self.problem)
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(text)


class ValidationFailed(MnemetricError):
    """Several problems found while validating a whole file."""

    def __init__(self, file: str, problems: list[Problem]):
        self.file = str(file)
        self.problems = problems
        head = f"{file}: {len(problems)} problem(s) found"
        shown = "\n".join(f"  - {p}" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{head}\n{shown}{more}")


class IntegrityError(MnemetricError):
    """A file's content does not match its pinned hash or size."""


class DownloadError(MnemetricError):
    """A file could not be obtained (network, HTTP status, offline)."""


class ConfigError(MnemetricError):
    """params.yaml / conf/ is missing a key or names an unknown option."""
