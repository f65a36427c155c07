"""Retrieval metrics from a scored retrieval log: both averaging rules, per type, bootstrap CIs.

Pure: takes the :class:`~.scored_retrieval.ScoredRetrieval` that ``score_retrieval_log`` returns and
returns the metrics dict. The
averages are upstream's two rules (scoring/retrieval_averaging.py); the per-type breakdown and the intervals are
Mnemetric additions, labelled as such in the file.

Intervals: every retrieval number is a plain mean over questions (per rule, or per rule and type).
Where every per-question value is 0 or 1 (recall_any / recall_all at k, and any metric that happens
to be 0/1 on these questions) the mean is a proportion k/n and its interval is the exact
Clopper-Pearson interval (``mnemetric.stats.clopper_pearson``; the percentile bootstrap covered
0.816 for 0/1 recall at n = 36, and says [1, 1] when every question scores 1); otherwise a pooled
percentile bootstrap of that mean (``mnemetric.stats.bootstrap_mean``, the same draws as the
intervals before it). Each ``ci95`` entry names its method; the exact one does not need resamples.

Two views: :func:`retrieval_metrics` is the detail (metrics/detail/retrieval.json);
:func:`retrieval_headline` the headline (metrics/retrieval.json): for each rule, n and the
recall_all@5/10 and ndcg_any@5/10 means (recall@5/10, ndcg@5/10 under the historical profile)
at both levels, no interval. :func:`retrieval_metric_files` builds the three files (headline,
detail, plot rows) with their names and provenance, for the stage and `mnemetric score-retrieval`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import require_file
from mnemetric.official import OfficialEquivalence
from mnemetric.records import OPTIONAL_NUMBER, Fields
from mnemetric.longmemeval.rules import QUESTION_TYPES
from mnemetric.longmemeval.scoring.retrieval_averaging import AVERAGING_RULES, average_over, split_at_k
from mnemetric.longmemeval.scoring.scored_retrieval import ScoredRetrieval, levels_from_record, mapping_from_record
from mnemetric.stats import bootstrap_mean, clopper_pearson

BOOTSTRAP_METHOD = "percentile bootstrap of the mean over questions (pooled)"
EXACT_METHOD = "clopper-pearson exact (every per-question value 0/1)"
BOOTSTRAP_NOTE = ("Clopper-Pearson exact interval where every per-question value is 0/1, else a percentile "
                  "bootstrap of the mean over questions; a Mnemetric addition, not an upstream metric")
NAME_KEYS = ("profile", "official_equivalence", "memory", "variant", "suite", "granularity")
"""The keys both files start with (the headline holds these, then the rules)."""
HEADLINE_METRICS = ("recall_all", "ndcg_any", "recall", "ndcg")
HEADLINE_KS = (5, 10)
LEVELS = ("session", "turn")


def _interval(values: list[float], resamples: int, seed: int) -> dict[str, Any] | None:
    """{low, high, method} of the mean of ``values`` (module docstring); None without an interval."""
    if values and all(v in (0, 1) for v in values):
        low, high = clopper_pearson(int(sum(values)), len(values), 0.95)
        return {"low": low, "high": high, "method": EXACT_METHOD}
    res = bootstrap_mean(values, resamples, seed) if values and resamples > 0 else None
    return {"low": res.low, "high": res.high, "method": BOOTSTRAP_METHOD} if res is not None and res.interval else None


def _block(per_question: Mapping[str, Any], kept: list[str], resamples: int, seed: int) -> dict[str, Any]:
    """Averages over ``kept`` plus a CI for each averaged number."""
    avg = average_over({q: per_question[q] for q in kept}, kept)
    avg.pop("excluded")
    ci: dict[str, Any] = {}
    for level, metrics in avg.items():
        if level == "n":
            continue
        ci[level] = {}
        for name in metrics:
            values = [v for q in kept if (v := per_question[q].get(level, {}).get(name)) is not None]
            ci[level][name] = _interval(values, resamples, seed)
    return avg | {"ci95": ci}


def retrieval_metrics(scored: ScoredRetrieval, resamples: int, seed: int) -> dict[str, Any]:
    """Both averaging rules, each with per-question-type blocks; CIs on every averaged number."""
    per_q, questions = scored.per_question, scored.questions
    out: dict[str, Any] = {}
    for rule in AVERAGING_RULES:
        kept = [q for q in per_q if rule.keeps(q, questions[q].has_user_target)]
        block = {"rule": rule.description, **_block(per_q, kept, resamples, seed),
                 "excluded": len(per_q) - len(kept), "per_type": {}}
        for qtype in QUESTION_TYPES:
            of_type = [q for q in kept if questions[q].question_type == qtype]
            block["per_type"][qtype] = _block(per_q, of_type, resamples, seed) if of_type else {"n": 0}
        out[rule.name] = block
    return out


def retrieval_headline(detail: Mapping[str, Any]) -> dict[str, Any]:
    """Per rule: ``n`` and, per level present, the headline means (module docstring), in a fixed
    key order; no interval, no per-type block."""
    out: dict[str, Any] = {}
    for rule in (r.name for r in AVERAGING_RULES):
        block = detail[rule]
        out[rule] = {"n": block["n"]}
        for level in LEVELS:
            if level in block:
                out[rule][level] = {f"{m}@{k}": block[level][f"{m}@{k}"] for m in HEADLINE_METRICS
                                    for k in HEADLINE_KS if f"{m}@{k}" in block[level]}
    return out


def recall_curve(block: Mapping[str, Any], metric: str = "recall_all") -> list[dict[str, Any]]:
    """Rows {granularity, k, recall} of ``metric``@k for every level in ``block`` (session, then
    turn), for `dvc plots` (template recall_curve: recall against k, one line per granularity)."""
    rows = []
    for level in LEVELS:
        points = [(parsed[1], value) for name, value in block.get(level, {}).items()
                  if (parsed := split_at_k(name)) and parsed[0] == metric and value is not None]
        rows += [{"granularity": level, "k": k, "recall": v} for k, v in sorted(points)]
    return rows


@dataclass(frozen=True)
class RetrievalMetricFiles:
    """What a scored retrieval log gives: the three files, as JSON-ready values."""

    headline: dict[str, Any]
    """metrics/retrieval.json: NAME_KEYS, then per rule ``n`` and the headline means."""
    detail: dict[str, Any]
    """metrics/detail/retrieval.json: NAME_KEYS, memory_fingerprint, bootstrap, every mean per rule
    with intervals and per-type blocks (+ ``per_question`` and ``questions`` when asked for)."""
    plot: list[dict[str, Any]]
    """Rows {granularity, k, recall} of recall_all@k (recall@k under a non-upstream profile), rule exclude_abs."""
    scored: ScoredRetrieval | None = None
    """The scored result the files were built from (per-question values, both averages)."""


def retrieval_metric_files(scored: ScoredRetrieval, *, memory: str | None, variant: str | None,
                           suite: str | None, memory_fingerprint: str | None, resamples: int, seed: int,
                           per_question: bool = False) -> RetrievalMetricFiles:
    """The headline, detail and plot rows of a ``score_retrieval_log`` result, in their key order.

    ``per_question`` appends the per-question values (``per_question[qid][level][metric]``) and
    ``questions[qid] = {question_type, has_user_target}`` to the detail."""
    rules = retrieval_metrics(scored, resamples, seed)
    detail: dict[str, Any] = {
        "profile": scored.profile, "official_equivalence": scored.official_equivalence.to_record(),
        "memory": memory, "variant": variant, "suite": suite, "memory_fingerprint": memory_fingerprint,
        "granularity": scored.granularity,
        "bootstrap": {"resamples": resamples, "seed": seed, "level": 0.95, "note": BOOTSTRAP_NOTE},
        **rules,
    }
    if per_question:
        record = scored.to_record()
        detail |= {"per_question": record["per_question"], "questions": record["questions"]}
    headline = {**{k: detail[k] for k in NAME_KEYS}, **retrieval_headline(rules)}
    metric = "recall_all" if scored.official_equivalence.value else "recall"
    return RetrievalMetricFiles(headline, detail, recall_curve(rules["exclude_abs"], metric), scored)


# ---------------------------------------------------------------------------------------------
# Reading the detail back (metrics/detail/retrieval.json): the writer above, its reader here


def _count(raw: Mapping[str, Any], key: str, file: str, field: str) -> int:
    v = raw.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise InputError(file, "<root>", f"{field}.{key}", f"expected an integer >= 0, got {v!r}")
    return v


def _intervals(raw: Any, file: str, field: str) -> dict[str, dict[str, Any]]:
    """ci95: level -> metric -> {low, high, method} | None."""
    out: dict[str, dict[str, Any]] = {}
    for level, cis in mapping_from_record(raw, file, "<root>", field).items():
        for name, ci in mapping_from_record(cis, file, "<root>", f"{field}.{level}").items():
            ok = ci is None or (isinstance(ci, Mapping) and list(ci) == ["low", "high", "method"]
                                and all(isinstance(ci[b], (int, float)) for b in ("low", "high"))
                                and isinstance(ci["method"], str))
            if not ok:
                raise InputError(file, "<root>", f"{field}.{level}.{name}", "expected null or {low, high, method}")
        out[level] = dict(cis)
    return out


@dataclass(frozen=True)
class MeanBlock:
    """Means over a set of questions: n, level -> metric -> mean, their intervals (None: a per-type
    block of no question, written ``{"n": 0}``)."""

    n: int
    means: Mapping[str, Mapping[str, float | None]]
    ci95: Mapping[str, Mapping[str, Any]] | None

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, **{lv: dict(m) for lv, m in self.means.items()}}
        return out if self.ci95 is None else out | {"ci95": {lv: dict(c) for lv, c in self.ci95.items()}}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, field: str) -> MeanBlock:
        raw = mapping_from_record(raw, file, "<root>", field)
        skip = ("n", "ci95", "rule", "excluded", "per_type")
        return cls(_count(raw, "n", file, field), levels_from_record(raw, skip, file, "<root>", field),
                   _intervals(raw["ci95"], file, f"{field}.ci95") if "ci95" in raw else None)


@dataclass(frozen=True)
class RuleBlock:
    """One averaging rule in the detail: what it says, its means, how many it left out, per type."""

    rule: str
    mean: MeanBlock
    excluded: int
    per_type: Mapping[str, MeanBlock]

    def to_record(self) -> dict[str, Any]:
        return {"rule": self.rule, **self.mean.to_record(), "excluded": self.excluded,
                "per_type": {t: b.to_record() for t, b in self.per_type.items()}}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, field: str) -> RuleBlock:
        raw = mapping_from_record(raw, file, "<root>", field)
        if not isinstance(raw.get("rule"), str):
            raise InputError(file, "<root>", f"{field}.rule", "expected the rule's description (a string)")
        per_type = mapping_from_record(raw.get("per_type"), file, "<root>", f"{field}.per_type")
        return cls(raw["rule"], MeanBlock.from_record(raw, file=file, field=field),
                   _count(raw, "excluded", file, field),
                   {t: MeanBlock.from_record(b, file=file, field=f"{field}.per_type.{t}") for t, b in per_type.items()})


@dataclass(frozen=True)
class RetrievalDetail:
    """metrics/detail/retrieval.json (:attr:`RetrievalMetricFiles.detail`), typed; key order as written."""

    profile: str
    official_equivalence: OfficialEquivalence
    memory: str | None
    variant: str | None
    suite: str | None
    memory_fingerprint: str | None
    granularity: str
    bootstrap: Mapping[str, Any]
    """{resamples, seed, level, note}."""
    exclude_abs: RuleBlock
    exclude_abs_and_no_user_target: RuleBlock
    scored: ScoredRetrieval | None = None
    """The per-question values and question facts, when the file holds them (`mnemetric score-retrieval`)."""

    def to_record(self) -> dict[str, Any]:
        out = {"profile": self.profile, "official_equivalence": self.official_equivalence.to_record(), "memory": self.memory,
               "variant": self.variant, "suite": self.suite, "memory_fingerprint": self.memory_fingerprint,
               "granularity": self.granularity, "bootstrap": dict(self.bootstrap),
               "exclude_abs": self.exclude_abs.to_record(),
               "exclude_abs_and_no_user_target": self.exclude_abs_and_no_user_target.to_record()}
        if self.scored is not None:
            record = self.scored.to_record()
            out |= {"per_question": record["per_question"], "questions": record["questions"]}
        return out

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> RetrievalDetail:
        """Validate every field of the written layout; InputError naming file and field."""
        raw = mapping_from_record(raw, file, "<root>", "<root>")
        _check_names(raw, file)
        boot = mapping_from_record(raw.get("bootstrap"), file, "<root>", "bootstrap")
        if list(boot) != ["resamples", "seed", "level", "note"]:
            raise InputError(file, "<root>", "bootstrap", "expected {resamples, seed, level, note}")
        rules = [RuleBlock.from_record(raw.get(r.name), file=file, field=r.name) for r in AVERAGING_RULES]
        official = OfficialEquivalence.from_record(raw["official_equivalence"], file=file)
        return cls(raw["profile"], official, *(raw[k] for k in NAME_KEYS[2:5]), raw["memory_fingerprint"],
                   raw["granularity"], dict(boot),
                   *rules, _scored_part(raw, rules, file))


def _check_names(raw: Mapping[str, Any], file: str) -> None:
    if not isinstance(raw.get("profile"), str):
        raise InputError(file, "<root>", "profile", "expected the scoring profile's name (a string)")
    OfficialEquivalence.from_record(raw.get("official_equivalence"), file=file)
    for key in ("memory", "variant", "suite", "memory_fingerprint"):
        if key not in raw or not (raw[key] is None or isinstance(raw[key], str)):
            raise InputError(file, "<root>", key, "expected a string or null")
    if raw.get("granularity") not in (*LEVELS, "auto"):
        raise InputError(file, "<root>", "granularity", f"expected session or turn, got {raw.get('granularity')!r}")


def _scored_part(raw: Mapping[str, Any], rules: list[RuleBlock], file: str) -> ScoredRetrieval | None:
    if "per_question" not in raw and "questions" not in raw:
        return None
    averages = {r.name: {"n": b.mean.n, "excluded": b.excluded, **b.mean.means} for r, b in zip(AVERAGING_RULES, rules)}
    return ScoredRetrieval.from_record({**{k: raw[k] for k in ("profile", "official_equivalence", "granularity")},
                                        "per_question": raw.get("per_question"), "questions": raw.get("questions"),
                                        "aggregate": averages}, file=file)


def read_retrieval_detail(path: str | Path) -> RetrievalDetail:
    """metrics/detail/retrieval.json, read and validated (InputError naming file, record and field)."""
    file = str(require_file(path, fix="run the retrieval_metrics stage (or `mnemetric score-retrieval`) first"))
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(file, "<root>", "(file)", f"not valid JSON: {exc}") from None
    return RetrievalDetail.from_record(raw, file=file)


# ---------------------------------------------------------------------------------------------
# What the doors show (the card, `mnemetric runs`): the headline or the detail, of any revision


@dataclass(frozen=True)
class RetrievalShown:
    """What the doors read of metrics/detail/retrieval.json or the headline metrics/retrieval.json, typed:
    ``granularity`` and the ``exclude_abs`` rule's ``n`` and means (level -> metric -> mean). A field the
    file lacks is None (shows "—"); one of the wrong type is an InputError naming the file and the field."""

    granularity: str | None
    n: int | None
    means: Mapping[str, Mapping[str, float | None]]
    """exclude_abs: level (session / turn) -> metric -> mean, the levels the file has."""

    def mean(self, level: str, metric: str) -> float | None:
        return (self.means.get(level) or {}).get(metric)

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> RetrievalShown:
        f = Fields.shown(raw, file=file, fix="regenerate it with `dvc repro retrieval_metrics`")
        rule = f.within("exclude_abs")
        means = {}
        for level in LEVELS:
            block = rule.within(level)
            means[level] = {k: block.maybe(k, OPTIONAL_NUMBER) for k in block.raw}
        return cls(f.maybe("granularity", ((str,), "a string")), rule.maybe("n", ((int,), "an integer")),
                   {lv: m for lv, m in means.items() if lv in rule.raw})
