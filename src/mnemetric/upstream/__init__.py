"""Pinned upstream files: obtain one file of an upstream repository at a revision, verified by
sha256 (checkout, cache or download), and read string constants from it by parsing only."""

from mnemetric.upstream.literals import Field, Template
from mnemetric.upstream.pinned import (
    CHECKOUT_ENV,
    DEFAULT_BASE_URL,
    REPORTED,
    VERIFIED,
    KnownPin,
    KnownPins,
    PinnedFile,
    checkout_from_env,
    env_checkout,
    fix_text,
    obtain,
    verify,
)

__all__ = [
    "CHECKOUT_ENV",
    "DEFAULT_BASE_URL",
    "REPORTED",
    "VERIFIED",
    "Field",
    "KnownPin",
    "KnownPins",
    "PinnedFile",
    "Template",
    "checkout_from_env",
    "env_checkout",
    "fix_text",
    "obtain",
    "verify",
]
