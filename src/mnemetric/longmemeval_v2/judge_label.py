"""The 0/1 label in an LLM checker's reply, read as upstream LongMemEval-V2 reads it.

Rules from upstream ``evaluation/qa_eval_metrics.py`` (the binary-judgement parser) at
be15ea6e995462f3391c1a610892df3f67dfa7bd; the code is ours:

1. The reply is stripped (``None`` → ``""``; a non-string → ``str()``).
2. If it starts and ends with a triple backtick and has ≥ 3 lines (``str.splitlines``), its first and
   last line are dropped and the rest is joined with ``"\\n"`` and stripped.
3. Empty → upstream aborts the run.
4. The greedy DOTALL span from the first ``{`` to the last ``}`` is parsed as JSON. If that works and its
   ``label`` is one of ``{0, 1, "0", "1"}`` by Python set membership (so ``true``, ``false``, ``1.0``, ``0.0``
   pass too), the label is ``int(label)``. An unhashable label (a list, an object) makes upstream crash.
5. Otherwise three regular expressions, case-insensitive, on the whole cleaned text, first hit wins:
   ``"label"`` ``:`` digit; ``'label'`` ``:`` digit; the word ``label`` then ``:`` or ``=`` then digit —
   the digit being the first character 0 or 1 (so ``"label": 10`` reads as 1, as upstream).
6. Otherwise upstream aborts the run.

Where upstream aborts (3, 4's crash, 6) we raise :class:`UnparseableJudgeReply`, which carries the reply;
a caller that keeps going must mark the question failed (never score it silently).
"""

from __future__ import annotations

import json
import re

from mnemetric.errors import MnemetricError

_JSON_SPAN = re.compile(r"\{.*\}", re.DOTALL)
_LABEL_PATTERNS = (
    re.compile(r'"label"\s*:\s*([01])', re.IGNORECASE),
    re.compile(r"'label'\s*:\s*([01])", re.IGNORECASE),
    re.compile(r"\blabel\b\s*[:=]\s*([01])", re.IGNORECASE),
)
_ACCEPTED_LABELS = frozenset({0, 1, "0", "1"})


class UnparseableJudgeReply(MnemetricError):
    """An LLM checker's reply holds no 0/1 label where upstream would abort the run.

    ``reply`` is the reply as received; ``reason`` says which rule gave up.
    """

    def __init__(self, reply: object, reason: str):
        self.reply = reply
        self.reason = reason
        shown = repr(reply)
        if len(shown) > 300:
            shown = shown[:300] + "…"
        super().__init__(f"judge reply has no 0/1 label ({reason}); upstream aborts the run here: {shown}")


def clean_reply(reply: object) -> str:
    """Steps 1–2: the stripped reply, without a surrounding triple-backtick fence of ≥ 3 lines."""
    text = "" if reply is None else (reply if isinstance(reply, str) else str(reply))
    text = text.strip()
    if text.startswith("```") and text.endswith("```"):
        lines = text.splitlines()
        if len(lines) >= 3:
            return "\n".join(lines[1:-1]).strip()
    return text


def _label_from_json(reply: object, cleaned: str) -> int | None:
    """Step 4: the label of the JSON span, or None when there is none (then the regexes run)."""
    span = _JSON_SPAN.search(cleaned)
    if span is None:
        return None
    try:
        payload = json.loads(span.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(payload, dict):  # cannot happen for a {...} span; upstream aborts if it did
        raise UnparseableJudgeReply(reply, "the JSON payload is not an object")
    label = payload.get("label")
    try:
        accepted = label in _ACCEPTED_LABELS
    except TypeError:
        raise UnparseableJudgeReply(reply, f"the JSON label is unhashable ({type(label).__name__})") from None
    return int(label) if accepted else None


def parse_judge_label(reply: object) -> int:
    """The 0/1 label of an LLM checker reply (rules in the module docstring); else UnparseableJudgeReply."""
    cleaned = clean_reply(reply)
    if not cleaned:
        raise UnparseableJudgeReply(reply, "the reply is empty")
    label = _label_from_json(reply, cleaned)
    if label is not None:
        return label
    for pattern in _LABEL_PATTERNS:
        hit = pattern.search(cleaned)
        if hit is not None:
            return int(hit.group(1))
    raise UnparseableJudgeReply(reply, "no JSON label and no label pattern")


REASON_CHARS = 2000
"""A kept reason is cut to this many characters (a diagnosis, not an archive of the reply)."""


def reply_reason(reply: object) -> str | None:
    """The ``reason`` string of the reply's JSON object (the span of step 4), stripped and cut to
    :data:`REASON_CHARS`; None when there is none. Mnemetric's: upstream reads only the label."""
    span = _JSON_SPAN.search(clean_reply(reply))
    try:
        payload = json.loads(span.group(0)) if span else None
    except json.JSONDecodeError:
        return None
    reason = payload.get("reason") if isinstance(payload, dict) else None
    return (reason.strip()[:REASON_CHARS] or None) if isinstance(reason, str) else None
