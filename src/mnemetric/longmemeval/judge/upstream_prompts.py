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

Two modules, by meaning: :mod:`~mnemetric.longmemeval.judge.upstream_file` (the pinned file and how
to obtain it verified) and this one (which template each branch of the prompt function is, the
prompt set, its pinned hash, template choice and the label rule). The static analysis itself is the
project's one pinned-text engine, :mod:`mnemetric.upstream.literals`. Import each name from the
module that defines it.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mnemetric.errors import InputError, UpstreamFormatError
from mnemetric.io import dumps_canonical, sha256_bytes, sha256_text
from mnemetric.longmemeval.judge.upstream_file import PATH, REVISION, SHA256, locate_evaluate_qa
from mnemetric.longmemeval.rules import ABSTENTION_MARK
from mnemetric.upstream import DEFAULT_BASE_URL
from mnemetric.upstream import literals as lit

PROMPT_SET_SHA256: str | None = "80a2a38e6c8aa82aaefb929f7b755d2bdfce9253c066f20174e0ab51cc358b53"
"""sha256 of the canonical JSON of the five templates extracted from the pinned file.

Recorded on 2026-11-29 by running :func:`load_prompt_set` on evaluate_qa.py whose bytes hashed to
``SHA256`` (the file itself is not in this repository). In the same check, ``PromptSet.render``
gave exactly the prompts of upstream's own ``get_anscheck_prompt`` for all six types, with and
without "_abs", for str, int and float answers (36 cases). A run whose extracted prompt set hashes
differently (another file, or a change in the extractor) is not official.
"""

FUNCTION_NAME = "get_anscheck_prompt"
TEMPLATE_KEYS = ("abstention", "default", "temporal-reasoning", "knowledge-update", "single-session-preference")
DEFAULT_TASKS = frozenset({"single-session-user", "single-session-assistant", "multi-session"})
TYPE_TO_KEY: Mapping[str, str] = {
    "single-session-user": "default",
    "single-session-assistant": "default",
    "multi-session": "default",
    "temporal-reasoning": "temporal-reasoning",
    "knowledge-update": "knowledge-update",
    "single-session-preference": "single-session-preference",
}
ALL_TASKS = frozenset(TYPE_TO_KEY)


# --------------------------------------------------------------------------- extracting the templates


def extract_templates(source_text: str, *, filename: str = PATH) -> dict[str, str]:
    """Find the five judge templates in upstream ``evaluate_qa.py`` source, by static analysis only.

    Parity source: xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py @ 9e0b455f. The source is
    parsed (:func:`mnemetric.upstream.literals.parse`); nothing in it runs. Inside the prompt function
    every string literal that is ``.format``-ed (directly, or via a variable that is ``.format``-ed
    anywhere in the function) is a template (:func:`~mnemetric.upstream.literals.formatted_literals`);
    the if/elif/else tests on the path to it decide its key (see :func:`_classify`). Raises
    UpstreamFormatError naming what is missing, ambiguous or malformed.
    """
    tree = lit.parse(source_text, filename)
    func = _find_prompt_function(tree, filename)
    params = lit.parameters(func)
    if not params or "abstention" not in params:
        raise UpstreamFormatError(filename, f"{func.name} has no 'abstention' parameter (parameters: {params})")
    constants = lit.module_string_collections(tree)
    found: dict[str, str] = {}
    unclassified = 0
    for text, conds in lit.formatted_literals(func):
        key = _classify(conds, params[0], "abstention", constants)
        if key is None:
            unclassified += 1
        elif found.setdefault(key, text) != text:
            raise UpstreamFormatError(filename, f"{FUNCTION_NAME}: two different templates select key '{key}'")
    missing = [k for k in TEMPLATE_KEYS if k not in found]
    if missing:
        raise UpstreamFormatError(
            filename, f"{FUNCTION_NAME}: no template found for {', '.join(missing)} "
            f"(found: {', '.join(found) or 'none'}; {unclassified} template(s) with an unrecognised selecting "
            f"condition)\n  fix: the file does not have the pinned upstream shape; use revision {REVISION}"
        )
    for key in TEMPLATE_KEYS:
        check_template_fields(key, found[key], filename)
    return {k: found[k] for k in TEMPLATE_KEYS}


def check_template_fields(key: str, template: str, filename: str = PATH) -> None:
    """Require exactly three automatic positional ``{}`` fields (question, answer, response)."""
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise UpstreamFormatError(filename, f"template '{key}' is not a valid format string ({exc})") from None
    if len(names) != 3 or any(name != "" for name in names):
        shown = ", ".join("{" + n + "}" for n in names) or "none"
        raise UpstreamFormatError(
            filename, f"template '{key}' has {len(names)} replacement field(s) ({shown}); "
            "expected exactly 3 positional '{}' fields (question, answer, response)"
        )


def _find_prompt_function(tree: ast.Module, filename: str) -> lit.FunctionNode:
    """The function named get_anscheck_prompt, else the only function with an ``abstention`` parameter."""
    funcs = lit.all_functions(tree)
    named = [f for f in funcs if f.name == FUNCTION_NAME]
    if len(named) == 1:
        return named[0]
    candidates = [f for f in funcs if "abstention" in lit.parameters(f)]
    if not named and len(candidates) == 1:
        return candidates[0]
    raise UpstreamFormatError(
        filename, f"expected one function {FUNCTION_NAME}(task, question, answer, response, abstention=False); "
        f"found {len(named)} with that name and {len(candidates)} with an 'abstention' parameter"
    )


def _classify(conds: tuple[lit.Condition, ...], task_var: str, abs_var: str,
              constants: Mapping[str, frozenset[str]]) -> str | None:
    """Map the conditions on a template's path to a template key, or None if they do not decide one.

    ``abstention`` true on the path → "abstention". Otherwise the task values allowed by the
    ``task == ...`` / ``task in [...]`` tests (true branches intersect; false branches, e.g. a final
    ``else``, exclude from the six types) must be exactly the default trio or one other type.
    """
    abstention: bool | None = None
    allowed: frozenset[str] | None = None
    excluded: set[str] = set()
    for test, truth in conds:
        value = lit.implied_bool(test, abs_var, truth)
        if value is not None:
            abstention = value
            continue
        tasks = lit.compared_strings(test, task_var, constants)
        if tasks is None:
            continue
        values, positive = tasks
        if positive == truth:
            allowed = values if allowed is None else allowed & values
        else:
            excluded |= values
    if abstention:
        return "abstention"
    if allowed is None and not excluded:
        return None
    effective = (ALL_TASKS if allowed is None else allowed) - excluded
    if effective == DEFAULT_TASKS:
        return "default"
    if len(effective) == 1 and next(iter(effective)) in TYPE_TO_KEY and next(iter(effective)) not in DEFAULT_TASKS:
        return next(iter(effective))
    return None


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
    """Template key (see TEMPLATE_KEYS) → format string with three positional fields."""
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
