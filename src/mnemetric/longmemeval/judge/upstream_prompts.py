"""The upstream LongMemEval judge prompts, read from the pinned upstream file at run time.

Clean-room rule: no upstream prompt text lives in this repository. The five judge templates are
*extracted* from ``src/evaluation/evaluate_qa.py`` of xiaowu0162/LongMemEval at revision
9e0b455f4ef0e2ab8f2e582289761153549043fc (sha256 pinned below), which the user supplies (a checkout
named by ``MNEMETRIC_LONGMEMEVAL_DIR``) or which is downloaded once and cached after its sha256 is
verified. The file is parsed with :mod:`ast` only: it is never executed, evaluated or imported.

Facts used (shared/docs/upstream-protocol.md §3.2): the templates are string literals inside
``get_anscheck_prompt(task, question, answer, response, abstention=False)``, chosen by if/elif on
``abstention`` and ``task`` and filled positionally with (question, answer, response); the caller
passes ``abstention = "_abs" in question_id``, so the abstention template wins over the type; the
label is ``"yes" in response.strip().lower()``.

Three modules, by meaning: :mod:`~mnemetric.longmemeval.judge.upstream_file` (the pinned file and how
to obtain it verified), :mod:`~mnemetric.longmemeval.judge.template_extraction` (the static analysis
that finds the templates) and this one (the prompt set, its pinned hash, template choice and the
label rule). Import each name from the module that defines it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mnemetric.errors import InputError
from mnemetric.io import dumps_canonical, sha256_bytes, sha256_text
from mnemetric.longmemeval.judge.template_extraction import TYPE_TO_KEY, extract_templates
from mnemetric.longmemeval.judge.upstream_file import SHA256, locate_evaluate_qa
from mnemetric.longmemeval.rules import ABSTENTION_MARK
from mnemetric.upstream import DEFAULT_BASE_URL

PROMPT_SET_SHA256: str | None = "80a2a38e6c8aa82aaefb929f7b755d2bdfce9253c066f20174e0ab51cc358b53"
"""sha256 of the canonical JSON of the five templates extracted from the pinned file.

Recorded on 2026-11-29 by running :func:`load_prompt_set` on evaluate_qa.py whose bytes hashed to
``SHA256`` (the file itself is not in this repository). In the same check, ``PromptSet.render``
gave exactly the prompts of upstream's own ``get_anscheck_prompt`` for all six types, with and
without "_abs", for str, int and float answers (36 cases). A run whose extracted prompt set hashes
differently (another file, or a change in the extractor) is not official.
"""


# --------------------------------------------------------------------------- using the templates


def template_key_for(question_id: str, question_type: str) -> str:
    """Template key in upstream's selection order (evaluate_qa.py @ 9e0b455f).

    "_abs" anywhere in question_id selects the abstention template first, whatever the type; then
    the type decides; an unknown type is an error (upstream raises NotImplementedError).
    """
    if ABSTENTION_MARK in question_id:
        return "abstention"
    try:
        return TYPE_TO_KEY[question_type]
    except KeyError:
        raise InputError("<reference>", question_id, "question_type",
                         f"unknown question_type {question_type!r}; expected one of {sorted(TYPE_TO_KEY)}") from None


def parse_label(response_text: str) -> bool:
    """Upstream label rule (evaluate_qa.py @ 9e0b455f): ``"yes" in response.strip().lower()``.

    A substring test, kept as is for parity: "Yes.", "yes, because ..." and even "yesterday"
    count as true; "no" or anything without the three letters counts as false.
    """
    return "yes" in response_text.strip().lower()


@dataclass(frozen=True)
class PromptSet:
    """The five extracted judge templates plus their provenance hashes."""

    templates: Mapping[str, str]
    """Template key (see template_extraction.TEMPLATE_KEYS) → format string with three positional fields."""
    source_sha256: str
    """sha256 of the evaluate_qa.py bytes the templates were extracted from."""
    prompt_set_sha256: str = field(init=False)
    """sha256 of canonical JSON (sorted keys, separators (",", ":")) of ``templates``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "templates", dict(self.templates))
        object.__setattr__(self, "prompt_set_sha256", sha256_text(dumps_canonical(dict(self.templates))))

    @classmethod
    def from_file(cls, path: str | Path) -> PromptSet:
        """Extract from a (previously verified) file; reads bytes, never runs them."""
        data = Path(path).read_bytes()
        return cls(extract_templates(data.decode("utf-8"), filename=str(path)), sha256_bytes(data))

    @property
    def is_pinned(self) -> bool:
        """True if extracted from the pinned file (and, once recorded, equal to PROMPT_SET_SHA256)."""
        if self.source_sha256 != SHA256:
            return False
        return PROMPT_SET_SHA256 is None or self.prompt_set_sha256 == PROMPT_SET_SHA256

    def template_key_for(self, question_id: str, question_type: str) -> str:
        """See the module-level :func:`template_key_for`."""
        return template_key_for(question_id, question_type)

    def render(self, question_id: str, question_type: str, question: str, answer: str | int | float,
               hypothesis: str) -> str:
        """The judge prompt: ``template.format(question, answer, response)`` as upstream fills it.

        ``answer`` may be a bare number (real data has some); ``str.format`` turns it into text
        exactly as upstream's call does (``format(15, "")`` == ``str(15)``).
        """
        return self.templates[self.template_key_for(question_id, question_type)].format(question, answer, hypothesis)


def load_prompt_set(checkout_dir: str | None, cache_dir: Path, download: bool = True,
                    base_url: str = DEFAULT_BASE_URL, *, expected_sha256: str = SHA256) -> PromptSet:
    """Locate + verify upstream evaluate_qa.py, then extract its templates."""
    path = locate_evaluate_qa(checkout_dir, cache_dir, download, base_url, expected_sha256=expected_sha256)
    return PromptSet.from_file(path)
