"""LongMemEval-V2's doors: its result card, its report page and its row of `mnemetric runs`.

The frames are generic (:mod:`mnemetric.custody.card`, :mod:`mnemetric.report.page`, `mnemetric
runs`); what they show of V2 is here, read from stage v2's files only:

* metrics/run-v2.json (the run manifest): data custody (``variant``: name, data root, haystack,
  source, repo @ revision, the custody record and its sha256, ``sha256_verified``), the memory
  system (name, code fingerprint, config sha256), reader (name, model, ``official``), checker
  (``judge``: name, model, prompt-set sha256, ``official``), token counter (name, ``official``),
  counts and ``official_equivalence`` (:class:`mnemetric.official.OfficialEquivalence`);
* metrics/v2.json: accuracy (value, Clopper-Pearson interval, n) of the combined run — full set,
  non-abstention, abstention — and of each domain (web, enterprise), then each category's
  ``pct_correct`` over ``count`` (``by_category.non_abstention_by_category``, then
  ``by_category.abstention_overall``);
* metrics/v2-latency.json and metrics/detail/v2.json, when present (:mod:`.report_sections`): latency, LAFS,
  the memory system's build time and model calls, tokens by item type, failure attribution, checker reasons.

A key the files lack shows as not recorded (``—``), never as 0. Each file is read through its typed display
record, beside its writer: metrics/run-v2.json :class:`~mnemetric.longmemeval_v2.manifest.RunV2Shown`,
metrics/v2.json :class:`~mnemetric.longmemeval_v2.metrics_file.V2Shown`, params.yaml
:class:`~mnemetric.longmemeval_v2.params_schema.V2ParamsShown`; a field of the wrong type is an InputError
naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError
from mnemetric.family import RunSummary
from mnemetric.official import KEY, OfficialEquivalence
from mnemetric.longmemeval_v2.metrics_file import AccuracyShown, V2Shown
from mnemetric.longmemeval_v2.params_schema import V2ParamsShown
from mnemetric.longmemeval_v2.report_sections import sections as report_sections
from mnemetric.report.model import Equivalence, Fact, Headline, Interval, Report, TypeResult

V2_METRICS = "metrics/v2.json"
RUN_MANIFEST = "metrics/run-v2.json"
REPORT_PARAMS = ("paths.metrics_v2", "paths.run_manifest_v2")
ACCURACY = (("overall_full_set", "accuracy (full set)"), ("non_abstention_only", "non-abstention accuracy"),
            ("abstention_only", "abstention accuracy"))
METHOD = {"clopper-pearson": "exact Clopper-Pearson (95%)"}


def _code(x: Any) -> str:
    return "—" if x in (None, "", []) else f"`{x}`"


def _flag(x: Any, yes: str, no: str) -> str:
    return "not recorded" if x is None else (yes if x else no)


def gate(run: Mapping[str, Any] | None, file: str = RUN_MANIFEST) -> OfficialEquivalence | None:
    """The run manifest's verdict (None: no manifest)."""
    if not isinstance(run, Mapping) or run.get(KEY) is None:
        return None
    return OfficialEquivalence.from_record(run[KEY], file=file)


# ---------------------------------------------------------------------------------------------
# The card's custody bullets


def _shown(run: Mapping[str, Any] | None) -> Any:
    from mnemetric.longmemeval_v2.manifest import RunV2Shown  # manifest.py imports the family, which imports us

    return RunV2Shown.from_record(run)


def _count(x: int | None) -> Any:
    return "—" if x is None else x


def card_custody(run: Mapping[str, Any], outputs: Mapping[str, Any] | None = None,
                 params: Mapping[str, Any] | None = None) -> list[str]:
    """The run manifest's custody facts, one bullet each (module docstring)."""
    r = _shown(run)
    source = f"{r.variant_source}{', ' + r.variant_repo if r.variant_repo else ''}" \
             f"{' @ ' + r.variant_revision if r.variant_revision else ''}"
    return [
        f"- data: {_code(r.variant_name)} ({source}), root {_code(r.variant_data_root)}, haystack "
        f"{_code(r.variant_haystack)}; custody record {_code(r.custody_file)} sha256 {_code(r.custody_sha256)} "
        f"({'verified' if r.variant_sha256_verified else 'NOT verified'} against the dataset pins)",
        f"- memory system: {_code(r.memory_name)}, code fingerprint {_code(r.memory_fingerprint_sha256)}, "
        f"config sha256 {_code(r.memory_config_sha256)}",
        f"- reader: {_code(r.reader_name)}, model {_code(r.reader_model)} "
        f"({_flag(r.reader_official, 'official', 'not official')})",
        f"- checker: {_code(r.judge_name)}, model {_code(r.judge_model)}, prompt-set sha256 "
        f"{_code(r.judge_prompt_set_sha256)} ({_flag(r.judge_official, 'official', 'not official')})",
        f"- token counter: {_code(r.token_counter_name)} "
        f"({_flag(r.token_counter_official, 'official', 'not official')})",
        f"- {_count(r.counts_judged)} of {_count(r.counts_questions)} questions checked, "
        f"{_count(r.counts_failed)} failed",
    ]


# ---------------------------------------------------------------------------------------------
# The report


def _interval(block: AccuracyShown) -> Interval | None:
    return Interval(block.low, block.high) if block.low is not None and block.high is not None else None


def headline_rows(v2: V2Shown) -> list[Headline]:
    """The combined accuracy blocks, then each domain's (module docstring)."""
    rows = []
    for scope, blocks in v2.accuracy.items():
        for key, label in ACCURACY:
            block = blocks.get(key)
            if block is not None:
                rows.append(Headline(f"{label} ({scope})", block.value, _interval(block), block.n,
                                     METHOD.get(str(block.method), str(block.method or "no interval"))))
    return rows


def category_rows(v2: V2Shown) -> tuple[TypeResult, ...]:
    """Each category's pct_correct over count, then the abstention categories together."""
    return tuple(TypeResult(c.name, c.pct_correct, None, c.count) for c in v2.categories)


def custody_facts(run: Mapping[str, Any]) -> tuple[Fact, ...]:
    r = _shown(run)
    official = lambda flag: _flag(flag, "official", "not official")  # noqa: E731
    return (
        Fact("dataset", r.variant_name), Fact("data root", r.variant_data_root, code=True),
        Fact("haystack", r.variant_haystack), Fact("source", r.variant_source),
        Fact("dataset revision", r.variant_revision, code=True),
        Fact("custody record", r.custody_file, code=True),
        Fact("custody record sha256", r.custody_sha256, code=True),
        Fact("verification", _flag(r.variant_sha256_verified, "every file verified against the dataset pins",
                                   "NOT verified")),
        Fact("memory system", r.memory_name), Fact("memory code fingerprint", r.memory_fingerprint_sha256, code=True),
        Fact("reader", " ".join(x for x in (r.reader_name, r.reader_model) if x) or None),
        Fact("reader status", official(r.reader_official)),
        Fact("checker", " ".join(x for x in (r.judge_name, r.judge_model) if x) or None),
        Fact("checker prompt-set sha256", r.judge_prompt_set_sha256, code=True),
        Fact("checker status", official(r.judge_official)),
        Fact("token counter", r.token_counter_name), Fact("token counter status", official(r.token_counter_official)),
    )


def read_doc(path: str | Path, fix: str) -> dict[str, Any]:
    """A JSON object file; missing, invalid or not an object is an InputError naming it."""
    from mnemetric.custody.card import read_json
    from mnemetric.io import require_file

    doc = read_json(require_file(path, fix=fix))
    if not isinstance(doc, dict):
        raise InputError(str(path), "<file>", "<root>", "expected a JSON object", fix=fix)
    return doc


def report(p: Mapping[str, Any], card: str = "", baseline: str | None = None, **options: Any) -> Report:
    """V2's report model from metrics/v2.json and metrics/run-v2.json (flat params ``REPORT_PARAMS``)."""
    if baseline is not None:
        raise ConfigError("--baseline", "LongMemEval-V2's report lists no flips against a baseline",
                          fix="compare two V2 runs with `mnemetric v2 compare`")
    if options.get("judge_audit") is not None:
        raise ConfigError("--judge-audit", "a judge audit measures LongMemEval (V1) judges; LongMemEval-V2's "
                          "report has no judge-validity section", fix="set benchmark to longmemeval")
    fix = "run stage v2 (dvc repro v2) first"
    v2 = V2Shown.from_record(read_doc(p["paths.metrics_v2"], fix), file=str(p["paths.metrics_v2"]))
    run = read_doc(p["paths.run_manifest_v2"], fix)
    verdict = gate(run, str(p["paths.run_manifest_v2"]))
    return Report(
        title=f"Mnemetric report: LongMemEval-V2, memory {v2.memory or 'unknown'} on "
              f"{v2.option or 'unknown'} ({v2.tier or v2.haystack or 'unknown'})",
        equivalence=Equivalence(verdict.value, verdict.reasons) if verdict else
        Equivalence(False, ("the run manifest records no official_equivalence",)),
        custody=custody_facts(run), headline=tuple(headline_rows(v2)), per_type=category_rows(v2),
        per_type_title="Accuracy per category (pct_correct, upstream aggregated_metrics)",
        series_name=v2.memory or "this run", result_card=card,
        notes=("intervals are a Mnemetric addition (exact Clopper-Pearson per proportion); the category "
               "numbers are upstream's aggregated_metrics breakdown, web and enterprise together",),
        sections=report_sections())


# ---------------------------------------------------------------------------------------------
# `mnemetric runs`

HEADLINE = (("overall", "overall_full_set"), ("non_abs", "non_abstention_only"), ("abs", "abstention_only"))


def summary(params: Mapping[str, Any], read: Callable[[str], Any]) -> RunSummary:
    """V2's row of `mnemetric runs`: combined accuracy (full set, non-abstention, abstention); keys: the V2
    option, data root, haystack, domains, memory, reader, checker, token counter."""
    p = V2ParamsShown.from_record(params)
    metrics_path = p.paths.get("metrics_v2", V2_METRICS)
    combined = V2Shown.from_record(read(metrics_path), file=metrics_path).accuracy.get("combined", {})
    manifest_path = p.paths.get("run_manifest_v2", RUN_MANIFEST)
    run = read(manifest_path)
    keys = {"benchmark": p.benchmark, "v2": p.name, "data_root": p.data_root, "haystack": p.haystack,
            "domains": ",".join(p.domains or ()) or None, "reader": p.components["reader"],
            "checker": p.components["checker"], "token_counter": p.components["token_counter"]}
    headline = {label: combined[key].value if key in combined else None for label, key in HEADLINE}
    return RunSummary(headline=headline, keys=keys, official=gate(run, manifest_path), memory=p.components["memory"])
