"""The wire format of an embeddings vector: ``encoding_format`` "float" (a JSON list of numbers) or "base64".

"base64" is the standard base64 of the vector's little-endian IEEE-754 float32 values, 4 bytes each (what the
OpenAI API sends, and what the ``openai`` Python SDK asks for when its caller names no ``encoding_format``).
The two formats are two requests: the API does not promise the same vector for both (openai/openai-python#1064
reports float and base64 replies that differ in the last digits), so the format is part of the request body
and of the cache key. "float" is the default and is never written into a call's params, so the keys and
bodies of float requests are what they were before base64 was served.

A base64 vector is decoded exactly (:func:`decode_vector`: each float32 becomes the Python float of the same
value) and :func:`encode_base64` gives back the same bytes, so a library that asked base64 through the model
proxy gets byte for byte what the server sent, whether it came from the network or the response cache.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from typing import Any, Final

FLOAT: Final = "float"
BASE64: Final = "base64"
ENCODINGS: Final = (FLOAT, BASE64)


def check_encoding(encoding: Any) -> str:
    """``encoding`` if it is a served format, else ValueError."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding_format must be one of {', '.join(ENCODINGS)}, got {encoding!r}")
    return str(encoding)


def encoding_of(params: Mapping[str, Any]) -> str:
    """The format a request's params ask for (absent: "float")."""
    return check_encoding(params.get("encoding_format") or FLOAT)


def keyed_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with ``encoding_format`` kept only when it is not the default "float" (module docstring)."""
    out = dict(params)
    if (out.get("encoding_format") or FLOAT) == FLOAT:
        out.pop("encoding_format", None)
    return out


def decode_vector(value: Any) -> list[float] | None:
    """A reply's ``embedding`` as floats: a list of numbers as they are, a base64 string decoded exactly
    (little-endian float32); None if it is neither (a malformed reply)."""
    if isinstance(value, list):
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
            return None
        return [float(x) for x in value]
    if not isinstance(value, str):
        return None
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) % 4:
        return None
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def encode_base64(vector: Any) -> str:
    """The base64 of ``vector`` as little-endian float32 (exact for values that came from :func:`decode_vector`)."""
    values = list(vector)
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")
