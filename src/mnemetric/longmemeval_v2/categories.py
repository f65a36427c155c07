"""Question types, categories and the category orders used by LongMemEval-V2 aggregation.

Facts from upstream ``evaluation/harness.py`` (CATEGORY_MAP, NON_ABSTENTION_CATEGORIES,
ABSTENTION_CATEGORIES, COMBINED_ABSTENTION_CATEGORY_PAIRS) at be15ea6e995462f3391c1a610892df3f67dfa7bd.

A question *type* (``static-environment-abs`` …) maps to a *category* (``static-abs`` …). Whether a
question is an abstention problem is decided by its eval function, not by its type (see
``checkers.is_abstention_problem``); the ``-abs`` categories are where abstention questions land.
"""

from __future__ import annotations

from types import MappingProxyType

from mnemetric.errors import InputError

CATEGORY_MAP = MappingProxyType({
    "static-environment": "static",
    "static-environment-abs": "static-abs",
    "dynamic-environment": "dynamic",
    "dynamic-environment-abs": "dynamic-abs",
    "procedure": "procedure",
    "procedure-abs": "procedure-abs",
    "errors-gotchas": "gotchas",
})
"""question_type → category (harness.py CATEGORY_MAP); any other type aborts an upstream run."""

QUESTION_TYPES: tuple[str, ...] = tuple(CATEGORY_MAP)
"""The seven question types, in upstream's CATEGORY_MAP order."""

NON_ABSTENTION_CATEGORIES: tuple[str, ...] = ("static", "dynamic", "procedure", "gotchas")
"""Key order of ``non_abstention_by_category`` in aggregated_metrics.json."""

ABSTENTION_CATEGORIES: tuple[str, ...] = ("static-abs", "dynamic-abs", "procedure-abs")
"""Key order of ``abstention_by_category``: the categories of the three ``-abs`` types."""

COMBINED_ABSTENTION_CATEGORY_PAIRS = MappingProxyType({
    "static": ("static", "static-abs"),
    "dynamic": ("dynamic", "dynamic-abs"),
    "procedure": ("procedure", "procedure-abs"),
})
"""``combined_abstention_by_category``: each key pools every row whose category is in its pair."""


def category_of(question_type: str, *, file: str = "<questions>", record: str = "?") -> str:
    """The category of ``question_type``; an unknown type is an InputError (upstream aborts the run)."""
    try:
        return CATEGORY_MAP[question_type]
    except (KeyError, TypeError):
        raise InputError(file, record, "question_type", f"unknown question type {question_type!r}",
                         fix="one of: " + ", ".join(QUESTION_TYPES)) from None
