"""The Quiz family: three questions a chat model answers, scored by exact match. Every rule is Quiz's own.

* params: one typed section ``quiz`` (:class:`QuizParams`; its ``reader`` an open component built by
  ``_target_``), declared by the family (``params_sections``), chosen by the conf group ``quiz``;
* the run (:func:`run_quiz`): the reader component builds one :class:`ModelCall` per question, the
  run's executor sends them; each answer line records its request sha256 and the parameters sent
  (data/quiz/answers.jsonl); metrics/quiz.json holds ``recall`` (exact-match accuracy over n) per
  question kind and overall;
* the run manifest's sections (:func:`sections`): read from the answers file alone;
* the gate (``official_reasons``): the ``exam`` set from ``quizhub``, every question answered, by
  ``quiz-7`` (requested and returned), with exactly ``{"temperature": 0, "max_tokens": 5}``, on the
  family's official endpoint;
* the card's custody bullets, the report, the inventory review and the `mnemetric runs` row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from mnemetric.custody.inventory_file import Inventory
from mnemetric.execute import ModelCall
from mnemetric.family import CardRow, CardSpec, FamilyBase, RunSummary, TaskMetric
from mnemetric.io import write_json_atomic, write_jsonl_atomic
from mnemetric.official import OfficialEquivalence
from mnemetric.report.model import Equivalence, Fact, Headline, Report, TypeResult
from mnemetric.schema import MISSING, Section, _spec

QUESTIONS = (("q1", "easy", "What is two plus two?", "4"), ("q2", "easy", "What colour is the sky?", "blue"),
             ("q3", "hard", "What is the capital of France?", "Paris"))
"""(question id, kind, question, gold answer)."""
PARAMS = {"temperature": 0, "max_tokens": 5}
MODEL = "quiz-7"
METRICS, RUN = "metrics/quiz.json", "metrics/run-quiz.json"


@dataclass
class QuizParams:
    """params.yaml ``quiz``: the question set (typed); its ``reader`` is an open component."""

    name: str = MISSING
    source: str = field(default=MISSING, metadata=_spec(choices=("quizhub", "homemade")))
    questions: int = field(default=MISSING, metadata=_spec(min=1))  # type: ignore[assignment]
    answers: str = "data/quiz/answers.jsonl"
    """Where the answer lines go (Quiz keeps its file locations in its own section: no line in paths:)."""
    reader: Any = None


@dataclass(frozen=True)
class QuizReader:
    """Builds the model calls; owns no loop and no client (the executor sends them)."""

    name: str
    model: str
    temperature: float = 0
    max_tokens: int = 5
    base_url: Optional[str] = None

    def calls(self, questions: Sequence[tuple[str, str, str, str]]) -> list[ModelCall]:
        return [ModelCall.chat(role="reader", model=self.model, tag=qid, base_url=self.base_url,
                               messages=[{"role": "user", "content": f"Answer in one word: {text}"}],
                               params={"temperature": self.temperature, "max_tokens": self.max_tokens})
                for qid, _, text, _ in questions]


def run_quiz(params: Mapping[str, Any], executor: Any, reader: QuizReader) -> dict[str, Any]:
    """Answer the questions through ``executor``; write the answers (with their evidence) and metrics/quiz.json."""
    questions = QUESTIONS[: params["quiz"]["questions"]]
    outcomes = executor.run(reader.calls(questions), desc="quiz")
    lines = [{"question_id": qid, "kind": kind, "answer": o.text.strip(), "correct": o.text.strip() == gold,
              "model": o.model, "request_sha256": o.key, "params_sent": dict(o.params_sent),
              "endpoint": reader.base_url} for (qid, kind, _, gold), o in zip(questions, outcomes)]
    write_jsonl_atomic(params["quiz"]["answers"], lines)
    by_kind: dict[str, list[bool]] = {}
    for line in lines:
        by_kind.setdefault(line["kind"], []).append(line["correct"])
    metrics = {"variant": params["quiz"]["name"],
               "recall": {"acc": sum(x["correct"] for x in lines) / len(lines), "n": len(lines)},
               "per_kind": {k: {"acc": sum(v) / len(v), "n": len(v)} for k, v in sorted(by_kind.items())}}
    write_json_atomic(METRICS, metrics)
    return metrics


def read_answers(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines() if x.strip()]


def sections(params: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest sections, from the answers file (tracked) and params alone."""
    q, lines = params["quiz"], read_answers(params["quiz"]["answers"])
    sent = []
    for line in lines:
        if line["params_sent"] not in sent:
            sent.append(line["params_sent"])
    return {"variant": {"name": q["name"], "source": q["source"]}, "suite": {"name": "all"},
            "reader": {"name": q["reader"]["name"], "requested_model": q["reader"]["model"],
                       "resolved_models": sorted({x["model"] for x in lines if x["model"]}),
                       "endpoints": sorted({x["endpoint"] for x in lines if x["endpoint"]}),
                       "params_sent": sent, "requests": sorted(x["request_sha256"] for x in lines)},
            "counts": {"questions": q["questions"], "answered": len(lines)}}


def card_rows(docs: Mapping[str, Mapping[str, Any] | None]) -> list[CardRow]:
    quiz = docs.get("quiz") or {}
    if "recall" not in quiz:
        return []
    return [CardRow("recall", quiz["recall"]["acc"], n=quiz["recall"]["n"]),
            *[CardRow(f"recall ({k})", b["acc"], n=b["n"]) for k, b in quiz.get("per_kind", {}).items()]]


def card_custody(run: Mapping[str, Any], outputs: Any, params: Any) -> list[str]:
    r, c = run.get("reader") or {}, run.get("counts") or {}
    return [f"- exam: `{(run.get('variant') or {}).get('name')}` from {(run.get('variant') or {}).get('source')}",
            f"- reader: `{r.get('requested_model')}`, returned {r.get('resolved_models')}, sent {r.get('params_sent')}, "
            f"endpoint(s) {r.get('endpoints')}",
            f"- {c.get('answered')} of {c.get('questions')} answered"]


CARD = CardSpec({"quiz": ("metrics/quiz.json",)}, card_rows, empty="(Quiz measured nothing)", custody=card_custody)


def report(p: Mapping[str, Any], card: str, baseline: str | None = None, **options: Any) -> Report:
    metrics = json.loads(Path(METRICS).read_text(encoding="utf-8"))
    run = json.loads(Path(RUN).read_text(encoding="utf-8"))
    verdict = OfficialEquivalence.from_record(run["official_equivalence"], file=RUN)
    r = run["reader"]
    return Report(title=f"Quiz report: {run['variant']['name']}", equivalence=Equivalence(verdict.value, verdict.reasons),
                  custody=(Fact("exam", run["variant"]["name"]), Fact("reader model", r["requested_model"]),
                           Fact("first request sha256", (r["requests"] or [None])[0], code=True)),
                  headline=(Headline("recall", metrics["recall"]["acc"], None, metrics["recall"]["n"], "exact match"),),
                  per_type=tuple(TypeResult(k, b["acc"], None, b["n"]) for k, b in metrics["per_kind"].items()),
                  per_type_title="Recall per question kind", result_card=card)


def review(inv: Inventory, manifests: Sequence[Mapping[str, Any]], crosscheck: Any) -> Inventory:
    return inv.with_implementation("quiz", official_run=any(m["official_equivalence"]["value"] for m in manifests))


@dataclass(frozen=True)
class Quiz(FamilyBase):
    """The Quiz family (a :class:`mnemetric.family.Family`); ``official_endpoint`` comes from its conf option."""

    name: str = "quiz"
    display_name: str = "Quiz"
    metrics: str = "metrics/quiz.json"
    official_endpoint: str = "http://quiz.example.test/v1"
    task_metrics: Mapping[str, TaskMetric] = field(default_factory=lambda: {
        "recall": TaskMetric("metrics/quiz.json", "recall.acc", "recall.n"),
        "hard": TaskMetric("metrics/quiz.json", "per_kind.hard.acc", "per_kind.hard.n")})
    required_sections: Sequence[str] = ("variant", "reader", "counts")
    inventory_review: Callable[..., Any] | None = review
    run_manifest: str | None = "metrics/run-quiz.json"
    manifest_sections: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = sections
    card: CardSpec | None = CARD
    output_files: Callable[[Mapping[str, Any]], Sequence[str]] | None = lambda params: [params["quiz"]["answers"]]
    params_sections: Mapping[str, Any] = field(default_factory=lambda: {
        "quiz": Section(QuizParams, components=("reader",), fix="choose a reader with -S quiz.reader=...")})
    conf_groups: Mapping[str, str] = field(default_factory=lambda: {"quiz": "exam"})
    manifest_params: Sequence[str] = ("quiz",)
    output_params: Sequence[str] = ("quiz.answers",)
    fingerprints: Mapping[str, str] = field(default_factory=lambda: {"quiz.reader": "quiz-reader"})
    report_params: Sequence[str] = ("quiz.name",)
    report: Callable[..., Any] | None = report

    def official_reasons(self, manifest: Mapping[str, Any]) -> list[str]:
        v, r, c = manifest["variant"], manifest["reader"], manifest["counts"]
        out = []
        if (v.get("name"), v.get("source")) != ("exam", "quizhub"):
            out.append(f"question set {v.get('name')!r} from {v.get('source')!r} is not the quizhub exam")
        if c.get("answered") != c.get("questions"):
            out.append(f"{c.get('answered')} of {c.get('questions')} question(s) answered")
        if r.get("requested_model") != MODEL or r.get("resolved_models") != [MODEL]:
            out.append(f"reader model {r.get('requested_model')!r} (returned {r.get('resolved_models')}) is not {MODEL!r}")
        if r.get("params_sent") != [PARAMS]:
            out.append(f"parameters sent {r.get('params_sent')} are not {PARAMS}")
        if r.get("endpoints") != [self.official_endpoint]:
            out.append(f"endpoint(s) {r.get('endpoints')} are not Quiz's {self.official_endpoint}")
        return out

    def summary(self, params: Mapping[str, Any], read: Callable[[str], Any]) -> RunSummary:
        metrics, run = read("metrics/quiz.json") or {}, read("metrics/run-quiz.json")
        gate = None if run is None else OfficialEquivalence.from_record(run["official_equivalence"], file="run-quiz")
        return RunSummary({"recall": (metrics.get("recall") or {}).get("acc")},
                          {"benchmark": self.name, "exam": (params.get("quiz") or {}).get("name")}, gate)
