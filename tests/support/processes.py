"""Looking at other processes from a test (Linux /proc)."""

from __future__ import annotations

from pathlib import Path


def process_ended(pid: int) -> bool:
    """The process ``pid`` is gone (or a zombie: it ran to its end, only its exit status is left)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True
