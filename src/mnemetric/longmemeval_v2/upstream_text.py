"""The LongMemEval-V2 reader and LLM-checker texts, read at run time from the pinned upstream files.

Clean-room rule: no upstream prompt text lives in this repository. The texts are extracted by
parsing (:mod:`mnemetric.upstream.literals`; never executed or imported) from two files of
github.com/xiaowu0162/LongMemEval-V2 at revision be15ea6e995462f3391c1a610892df3f67dfa7bd, each
obtained and verified by sha256 with :func:`mnemetric.upstream.obtain` (a checkout named by
``MNEMETRIC_LONGMEMEVAL_V2_DIR``, else the cache, else a download).

* ``evaluation/harness.py`` → :class:`ReaderTexts`: the module-level ``DOMAIN_SYSTEM_PROMPTS``
  (web, enterprise) and, inside ``build_messages``, the strings of the user message's text parts:
  the intro (bound by ``=`` to the first name used as a ``{"type": "text", "text": NAME}`` part),
  the empty-context marker (the ``+=`` to that name, taken when there are no memory items) and the
  question part (the f-string bound to the last such name; its one field is the question text).
  shared/docs/upstream-v2-protocol.md §4: web 548 bytes, enterprise 393 bytes, and the boxed marker
  of their last sentence is U+0008 + "oxed{}" (a single backslash in a normal string) — evaluating
  the literal reproduces it.
* ``evaluation/qa_eval_metrics.py`` → :class:`CheckerTexts`: for ``llm_abstention_checker`` and
  ``llm_gotchas_checker``, the message builder each calls returns ``[system, user]``; the system
  content is a module-level string constant, the user content an f-string whose four fields are
  filled as in :func:`mnemetric.longmemeval_v2.requests.checker_messages` (§5).

Each text set has a sha256 over its canonical JSON (``to_record``; sorted keys, separators
(",", ":"), UTF-8), recorded below after computing it from the verified files; a run whose texts
hash differently, or come from a file whose sha256 we have not verified, is not official.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mnemetric.errors import UpstreamFormatError
from mnemetric.io import dumps_canonical, sha256_bytes, sha256_text
from mnemetric.upstream import DEFAULT_BASE_URL, REPORTED, VERIFIED, KnownPin, KnownPins, PinnedFile, Template, obtain
from mnemetric.upstream import literals as lit

REPO = "xiaowu0162/LongMemEval-V2"
REVISION = "be15ea6e995462f3391c1a610892df3f67dfa7bd"
REVISION_C5C552D = "c5c552dfcf023f5a2939f586541c7f6e55a36d5d"
REVISION_2CC8C540 = "2cc8c540bdb87fe6761629b585e727e1c4704520"
HARNESS_PATH = "evaluation/harness.py"
QA_EVAL_METRICS_PATH = "evaluation/qa_eval_metrics.py"
RUN_EVAL_PATH = "evaluation/run_eval.py"

_HASHED_BY_US = "hashed by Mnemetric from a git checkout (2026-12)"
KNOWN_PINS = KnownPins([
    KnownPin(PinnedFile(REPO, REVISION, HARNESS_PATH,
                        "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1"), VERIFIED, _HASHED_BY_US),
    KnownPin(PinnedFile(REPO, REVISION, QA_EVAL_METRICS_PATH,
                        "f8ba659e237c4282a07a92538090ea500ce8483820b390b1d19af187c01417ac"), VERIFIED, _HASHED_BY_US),
    KnownPin(PinnedFile(REPO, REVISION, RUN_EVAL_PATH,
                        "95d43fa67826eb6422ac18255ecad4110715472fe28c4d5ace7e6f1cc8179d43"), VERIFIED, _HASHED_BY_US),
    KnownPin(PinnedFile(REPO, REVISION, "leaderboard/compute_lafs.py",
                        "4670ea92ab87600e344bca7f387076b2a43f28b506d036950c10443ce2c8b8c2"), VERIFIED, _HASHED_BY_US),
    KnownPin(PinnedFile(REPO, REVISION, "leaderboard/submission_utils.py",
                        "1aa6e83ab8434a4e55dee8a581beb8d0c5eb01cd1c1341c58349ba61d069b088"), VERIFIED, _HASHED_BY_US),
    KnownPin(PinnedFile(REPO, REVISION, "leaderboard/combine_aggregated_metrics.py",
                        "b3b0a6af707aeb60fe985368aa2986968a4a9a266c2fff84b21f7e3d075d26cb"), VERIFIED, _HASHED_BY_US),
    KnownPin(PinnedFile(REPO, REVISION_C5C552D, HARNESS_PATH,
                        "051aa2e277ca9fb81a2681c730f0f98a3158a70b0201461e37228e4fc1d24ca7"), VERIFIED, _HASHED_BY_US),
    KnownPin(PinnedFile(REPO, REVISION_C5C552D, QA_EVAL_METRICS_PATH,
                        "f8ba659e237c4282a07a92538090ea500ce8483820b390b1d19af187c01417ac"), VERIFIED, _HASHED_BY_US),
    KnownPin(PinnedFile(REPO, REVISION_C5C552D, RUN_EVAL_PATH,
                        "80bf4f612281b7ad05915fe4bb05332d974d42cdebebc0c16726f0f166dfe720"), VERIFIED, _HASHED_BY_US),
    KnownPin(PinnedFile(REPO, REVISION_2CC8C540, HARNESS_PATH,
                        "93fe5855a74ad46d7e8b489cebac24de38a9b30ba7ec1de2dd8708bd4aeebdb6"), REPORTED,
             "third-party lock files (upstream-v2-protocol.md §0); not checked by us: never official"),
])
"""Known (revision, file, sha256) of LongMemEval-V2. Add a row when a file is verified at another revision."""

HARNESS = KNOWN_PINS.pin(REPO, REVISION, HARNESS_PATH)
QA_EVAL_METRICS = KNOWN_PINS.pin(REPO, REVISION, QA_EVAL_METRICS_PATH)
RUN_EVAL = KNOWN_PINS.pin(REPO, REVISION, RUN_EVAL_PATH)

DOMAINS = ("web", "enterprise")
SYSTEM_PROMPT_FACTS: Mapping[str, tuple[int, str]] = {
    "web": (548, "c70772c5f4ab1dbdcee28218d5e2b98595a84d64196012cbd00bb9de9e63fd1f"),
    "enterprise": (393, "b2d24d41b022824ddea06b61255ead1a9aceae79e4f1658775fddd6d6e66320e"),
}
"""Domain → (UTF-8 byte length, sha256) of the upstream system prompt (§4; our computation agrees)."""

CHECKER_NAMES = ("llm_abstention_checker", "llm_gotchas_checker")
CHECKER_FILL_RULES: Mapping[str, str] = {
    "question_text": "the question text, stripped ('' when absent)",
    "reference_answer": "the gold answer, stripped (str() of a non-string)",
    "model_full_response": "the reader's raw response, stripped",
    "model_final_answer": "the parsed boxed answer, stripped; the stripped raw response when that is empty",
}
"""Field of the checker user template → how upstream fills it (qa_eval_metrics.py llm_*_checker as
harness.py score_prediction calls them; applied by :func:`mnemetric.longmemeval_v2.requests.checker_messages`).
Before filling: a stripped raw response or gold answer that is empty scores False with no call."""
CHECKER_FIELDS = frozenset(CHECKER_FILL_RULES)

READER_TEXTS_SHA256: str | None = "4f8a82f85eae5716737e9d12e966b9943b6879e42ebac77eeb633d46be068cc5"
"""sha256 of ``ReaderTexts.to_record()`` (canonical JSON) extracted from harness.py @ be15ea6.

Recorded 2026-12-01 by running :func:`reader_texts` on the file whose bytes hash to
``HARNESS.sha256``; harness.py @ c5c552d (``051aa2e2…``) gives the same set. The file itself is not in
this repository; tests/parity/test_v2_texts_upstream.py re-checks the texts against upstream's own code.
"""

CHECKER_TEXTS_SHA256: str | None = "b0b0f7270369126f4853da57bd690af93a13f6def9079a3c89ddb73d2a98eb8a"
"""sha256 of ``CheckerTexts.to_record()`` (canonical JSON) extracted from qa_eval_metrics.py @ be15ea6.

Recorded 2026-12-01 by running :func:`checker_texts` on the file whose bytes hash to
``QA_EVAL_METRICS.sha256`` (the same bytes at c5c552d); re-checked by tests/parity/test_v2_texts_upstream.py.
"""


def _texts_sha256(record: object) -> str:
    return sha256_text(dumps_canonical(record))


@dataclass(frozen=True)
class ReaderTexts:
    """The reader's system prompts and user-message part strings, as extracted from harness.py."""

    system_prompts: Mapping[str, str]
    """Domain ("web" | "enterprise") → system message content, byte-exact."""
    intro: str
    """The first text part's text, before any memory item."""
    empty_marker: str
    """Appended to the intro (same part) when there are no memory items."""
    question_part: Template
    """The text part after the memory items: one field, the question text."""
    source_sha256: str
    """sha256 of the harness.py bytes these were extracted from."""
    texts_sha256: str = field(init=False)
    """sha256 of the canonical JSON of :meth:`to_record`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "system_prompts", dict(self.system_prompts))
        object.__setattr__(self, "texts_sha256", _texts_sha256(self.to_record()))

    def to_record(self) -> dict:
        return {"system_prompts": dict(self.system_prompts), "intro": self.intro,
                "empty_marker": self.empty_marker, "question_part": self.question_part.to_record()}

    def question_text(self, question: str) -> str:
        """The question part's text for ``question``."""
        return self.question_part.fill({self.question_part.fields[0]: question})

    def system_prompt_facts(self) -> dict[str, bool]:
        """Domain → whether its prompt has the byte length and sha256 of :data:`SYSTEM_PROMPT_FACTS`."""
        out = {}
        for domain, (size, digest) in SYSTEM_PROMPT_FACTS.items():
            data = self.system_prompts.get(domain, "").encode("utf-8")
            out[domain] = len(data) == size and sha256_bytes(data) == digest
        return out

    @property
    def source_status(self) -> str | None:
        """"verified" / "reported" for a known harness.py, else None (see :data:`KNOWN_PINS`)."""
        rows = KNOWN_PINS.matching(REPO, HARNESS_PATH, self.source_sha256)
        return VERIFIED if any(r.verified for r in rows) else (rows[0].status if rows else None)

    @property
    def is_pinned(self) -> bool:
        """Official only if the file is verified, the prompts match the facts and the set hash is recorded."""
        return (self.source_status == VERIFIED and all(self.system_prompt_facts().values())
                and READER_TEXTS_SHA256 is not None and self.texts_sha256 == READER_TEXTS_SHA256)


@dataclass(frozen=True)
class CheckerPrompt:
    """One LLM checker's two messages: the system rubric and the user-message template."""

    system: str
    user: Template
    """Fields: question_text, reference_answer, model_full_response, model_final_answer."""

    def to_record(self) -> dict:
        return {"system": self.system, "user": self.user.to_record()}


@dataclass(frozen=True)
class CheckerTexts:
    """The two LLM checkers' prompts, as extracted from qa_eval_metrics.py."""

    checkers: Mapping[str, CheckerPrompt]
    """Checker name (see :data:`CHECKER_NAMES`) → its prompts."""
    source_sha256: str
    texts_sha256: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "checkers", dict(self.checkers))
        object.__setattr__(self, "texts_sha256", _texts_sha256(self.to_record()))

    def to_record(self) -> dict:
        return {name: prompt.to_record() for name, prompt in self.checkers.items()}

    @property
    def source_status(self) -> str | None:
        rows = KNOWN_PINS.matching(REPO, QA_EVAL_METRICS_PATH, self.source_sha256)
        return VERIFIED if any(r.verified for r in rows) else (rows[0].status if rows else None)

    @property
    def is_pinned(self) -> bool:
        return (self.source_status == VERIFIED and CHECKER_TEXTS_SHA256 is not None
                and self.texts_sha256 == CHECKER_TEXTS_SHA256)


# --------------------------------------------------------------------------- extraction (parsing only)


def reader_texts(harness_source: str, *, filename: str = HARNESS_PATH) -> ReaderTexts:
    """Extract :class:`ReaderTexts` from harness.py source (parsed, never run)."""
    tree = lit.parse(harness_source, filename)
    prompts = lit.module_string_dict(tree, "DOMAIN_SYSTEM_PROMPTS", filename)
    if sorted(prompts) != sorted(DOMAINS):
        raise UpstreamFormatError(filename, f"DOMAIN_SYSTEM_PROMPTS has domains {sorted(prompts)}; expected {list(DOMAINS)}")
    func = lit.find_function(tree, "build_messages", filename)
    names = _text_part_names(func)
    if len(names) != 2:
        raise UpstreamFormatError(filename, f"build_messages(): expected two named text parts (intro, question); "
                             f"found {names}\n  fix: the file does not have the pinned shape; use revision {REVISION}")
    intro = lit.local_string(func, names[0], filename)
    empty = lit.local_string(func, names[0], filename, augmented=True)
    question = lit.local_template(func, names[1], filename)
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    if len(question.fields) != 1 or question.fields[0] not in params:
        raise UpstreamFormatError(filename, f"build_messages(): the question part should have one field, a parameter; "
                             f"found fields {list(question.fields)}")
    return ReaderTexts(prompts, intro, empty, question, sha256_text(harness_source))


def _text_part_names(func: lit.FunctionNode) -> list[str]:
    """Names used as the text of ``{"type": "text", "text": NAME}`` dicts, unique, in source order."""
    found: list[tuple[int, int, str]] = []
    for stmt in lit.own_statements(func):
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Dict):
                continue
            entries = {lit.string_value(k): v for k, v in zip(node.keys, node.values) if k is not None}
            if lit.string_value(entries.get("type")) == "text" and isinstance(entries.get("text"), ast.Name):
                found.append((node.lineno, node.col_offset, entries["text"].id))
    names: list[str] = []
    for _, _, name in sorted(found):
        if name not in names:
            names.append(name)
    return names


def checker_texts(qa_eval_metrics_source: str, *, filename: str = QA_EVAL_METRICS_PATH) -> CheckerTexts:
    """Extract :class:`CheckerTexts` from qa_eval_metrics.py source (parsed, never run)."""
    tree = lit.parse(qa_eval_metrics_source, filename)
    checkers = {name: _checker_prompt(tree, name, filename) for name in CHECKER_NAMES}
    return CheckerTexts(checkers, sha256_text(qa_eval_metrics_source))


def _message_builders(tree: ast.Module) -> dict[str, ast.List]:
    """Module-level functions returning a list display of ``{"role": ...}`` dicts → that list."""
    out = {}
    for func in (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for stmt in lit.own_statements(func):
            if (isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.List) and stmt.value.elts
                    and all(isinstance(e, ast.Dict) and "role" in map(lit.string_value, e.keys) for e in stmt.value.elts)):
                out[func.name] = stmt.value
    return out


def _checker_prompt(tree: ast.Module, name: str, filename: str) -> CheckerPrompt:
    checker = lit.find_function(tree, name, filename)
    builders = _message_builders(tree)
    called = sorted({n.func.id for s in lit.own_statements(checker) for n in ast.walk(s)
                     if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in builders})
    if len(called) != 1:
        raise UpstreamFormatError(filename, f"{name}(): expected a call to one message builder; found {called}")
    builder = lit.find_function(tree, called[0], filename)
    roles = {}
    for element in builders[called[0]].elts:
        entries = {lit.string_value(k): v for k, v in zip(element.keys, element.values)}
        roles[lit.string_value(entries.get("role"))] = entries.get("content")
    if sorted(roles, key=str) != ["system", "user"]:
        raise UpstreamFormatError(filename, f"{called[0]}(): expected a system and a user message; found roles {list(roles)}")
    system = _resolve(tree, builder, roles["system"], filename).parts
    user = _resolve(tree, builder, roles["user"], filename)
    if len(system) != 1 or not isinstance(system[0], str):
        raise UpstreamFormatError(filename, f"{called[0]}(): the system content is not a plain string literal")
    if set(user.fields) != CHECKER_FIELDS:
        raise UpstreamFormatError(filename, f"{called[0]}(): user template fields {sorted(set(user.fields))}; "
                             f"expected {sorted(CHECKER_FIELDS)}")
    return CheckerPrompt(system[0], user)


def _resolve(tree: ast.Module, func: lit.FunctionNode, node: ast.expr | None, filename: str) -> Template:
    """A message content: a literal / f-string, a local name bound to one, or a module-level string constant."""
    direct = lit.template_value(node)
    if direct is not None:
        return direct
    if isinstance(node, ast.Name):
        if lit.local_assignments(func, node.id):
            return lit.local_template(func, node.id, filename)
        return Template((lit.module_string(tree, node.id, filename),))
    raise UpstreamFormatError(filename, f"{func.name}(): a message content is neither a literal nor a name bound to one")


# --------------------------------------------------------------------------- obtaining + extracting


def _read_source(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UpstreamFormatError(path, f"not UTF-8 text ({exc})") from None


def load_reader_texts(checkout_dir: str | None, cache_dir: Path, *, download: bool = True,
                      base_url: str = DEFAULT_BASE_URL, pin: PinnedFile = HARNESS) -> ReaderTexts:
    """Obtain + verify harness.py (:func:`mnemetric.upstream.obtain`), then extract its reader texts."""
    path = obtain(pin, checkout_dir=checkout_dir, cache_dir=cache_dir, download=download, base_url=base_url,
                  known=KNOWN_PINS)
    return reader_texts(_read_source(path), filename=str(path))


def load_checker_texts(checkout_dir: str | None, cache_dir: Path, *, download: bool = True,
                       base_url: str = DEFAULT_BASE_URL, pin: PinnedFile = QA_EVAL_METRICS) -> CheckerTexts:
    """Obtain + verify qa_eval_metrics.py, then extract the two LLM checkers' prompts."""
    path = obtain(pin, checkout_dir=checkout_dir, cache_dir=cache_dir, download=download, base_url=base_url,
                  known=KNOWN_PINS)
    return checker_texts(_read_source(path), filename=str(path))
