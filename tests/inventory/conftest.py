"""Registers the ``task`` marker for these tests until tests/conftest.py loads tests.inventory_markers."""

from __future__ import annotations

from ..inventory_markers import pytest_configure  # noqa: F401  (a conftest hook)
