"""The report model: what one HTML report shows, as frozen dataclasses filled by the caller.

The model holds numbers and labels only; it reads no file and computes no metric. Whoever builds
it (a stage, the CLI, a notebook) takes the values from metrics/*.json, data/custody/ and the run
manifest, so the report shows exactly the numbers those files hold. ``None`` means "not recorded"
and is shown as such, never as 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Interval:
    """A confidence interval [low, high] around an estimate."""

    low: float
    high: float


@dataclass(frozen=True)
class Equivalence:
    """Whether every number equals what the upstream scripts compute, and why not."""

    official: bool
    reasons: tuple[str, ...] = ()
    """Why the run is not officially equivalent (empty when ``official``)."""


@dataclass(frozen=True)
class Custody:
    """Where the numbers come from: data, suite, components and their fingerprints."""

    dataset_variant: str
    dataset_revision: str | None
    dataset_sha256: str | None
    dataset_verified: bool | None
    """Whether the input file's sha256 matched its pin (None: not recorded)."""
    suite: str
    suite_ids_sha256: str | None
    adapter_schema: str | None
    memory_system: str
    memory_fingerprint: str | None
    """A hash of the memory system's code and settings, when the run records one."""
    reader: str
    judge_model: str | None
    """The resolved judge model snapshot (e.g. gpt-4o-2024-08-06)."""
    judge_prompt_set_sha256: str | None
    judged_file_sha256: str | None


@dataclass(frozen=True)
class Fact:
    """One custody row of a family that is not described by :class:`Custody`: an item and its value
    (None: not recorded), shown as code (hashes, paths) when ``code``."""

    item: str
    value: str | None
    code: bool = False


@dataclass(frozen=True)
class Headline:
    """One headline number with its interval, sample size and how the interval was made."""

    name: str
    value: float | None
    interval: Interval | None
    n: int | None
    method: str


@dataclass(frozen=True)
class TypeResult:
    """Accuracy on one question type."""

    question_type: str
    value: float | None
    interval: Interval | None
    n: int


@dataclass(frozen=True)
class CurvePoint:
    k: int
    value: float | None


@dataclass(frozen=True)
class Curve:
    """One retrieval curve, e.g. recall_all@k at session granularity."""

    name: str
    points: tuple[CurvePoint, ...]


@dataclass(frozen=True)
class Flip:
    """A question whose label changed against the baseline."""

    question_id: str
    question_type: str
    old_label: str
    new_label: str


@dataclass(frozen=True)
class Flips:
    """Questions that changed label against a baseline, with the paired statistics when given."""

    baseline: str
    rows: tuple[Flip, ...]
    paired_difference: float | None = None
    """Mean over the same questions of (new correct − old correct)."""
    interval: Interval | None = None
    mcnemar_p: float | None = None
    """Exact (binomial) McNemar p-value over the discordant pairs."""


@dataclass(frozen=True)
class CostRow:
    """Model-call cost of one stage (or the total)."""

    stage: str
    requests: int
    cache_hits: int | None
    """None: not recorded (the cost-of-work layout counts responses used, not cache hits)."""
    prompt_tokens: int
    completion_tokens: int
    usd: float


@dataclass(frozen=True)
class Table:
    """A table of text cells (shown escaped) with a caption; ``numeric`` columns are right-aligned."""

    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    numeric: tuple[int, ...] = ()


@dataclass(frozen=True)
class Section:
    """A titled section a family adds to its page: paragraphs, then tables (e.g. LongMemEval's judge validity)."""

    id: str
    """The HTML id (letters, digits, dashes)."""
    title: str
    paragraphs: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()


@dataclass(frozen=True)
class Report:
    """Everything one report page shows, in page order (banner first)."""

    title: str
    equivalence: Equivalence
    custody: Custody | tuple[Fact, ...]
    """LongMemEval's custody fields, or any family's rows (:class:`Fact`)."""
    headline: tuple[Headline, ...]
    per_type: tuple[TypeResult, ...]
    per_type_title: str = "Accuracy per question type"
    """The heading of the per-type bars (a family whose groups are not question types names its own)."""
    series_name: str = "this run"
    """The legend name of ``per_type`` in the bar chart."""
    baseline_name: str | None = None
    baseline_per_type: tuple[TypeResult, ...] = ()
    """Per-type results of the baseline, drawn beside ``per_type`` (same types)."""
    retrieval_title: str = "Retrieval"
    curves: tuple[Curve, ...] = ()
    flips: Flips | None = None
    cost: tuple[CostRow, ...] = ()
    result_card: str = ""
    """Markdown written by the caller, shown verbatim in a <pre> block."""
    notes: tuple[str, ...] = field(default=())
    """Extra lines shown under the headline table (e.g. the bootstrap note)."""
    sections: tuple[Section, ...] = ()
    """A family's own sections, shown after the flips (before cost and the result card)."""
