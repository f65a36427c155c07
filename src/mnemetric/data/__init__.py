"""Upstream LongMemEval data: typed records, streaming loader, validation, download and custody."""

from .longmemeval import (
    DATE_FORMAT,
    QUESTION_TYPES,
    Instance,
    Session,
    Turn,
    iter_instances,
    load_instances,
    validate_file,
)

__all__ = [
    "DATE_FORMAT",
    "QUESTION_TYPES",
    "Instance",
    "Session",
    "Turn",
    "iter_instances",
    "load_instances",
    "validate_file",
]
