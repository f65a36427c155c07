"""LongMemEval's review blocks of the task inventory, derived from its run manifests and the cross-check.

The frame (:func:`mnemetric.custody.inventory.derive_inventory`) recomputes every task status and
hands each family its own manifests; this is V1's ``Family.inventory_review``. Run-manifest keys
read (metrics/run.json; any absence or wrong type is an InputError naming the manifest and the key):

=============================== ============ ===================================================
key                             type         used for
=============================== ============ ===================================================
``variant.name``                str          official files (:data:`OFFICIAL` ``official_variants``)
``variant.sha256_verified``     bool         full held-out run: the file matched its pinned sha256
``suite.name``                  str          full held-out run needs "full"
``judge.prompt_set_sha256``     str | null   judge prompt parity (equal to the pinned hash)
``judge.params_sent``           obj | null   judge executed: ``requests`` > 0 model requests sent
``counts.questions``            int >= 0     questions in the run
``counts.judged``               int >= 0     judge executed needs > 0
``counts.failed``               int >= 0     full held-out run needs 0
``official_equivalence``        record       the publishability gate of the run (:class:`OfficialEquivalence`)
=============================== ============ ===================================================

Cross-check evidence read (``mnemetric crosscheck`` output, schema mnemetric.crosscheck/v1;
optional as a whole): ``upstream.pinned``, ``upstream.files[src/evaluation/evaluate_qa.py]`` and the
``checks`` whose ``script`` is ``evaluate_qa.py`` (all must ``agree``; see :class:`Crosscheck`).

Review rules (V1's manifests only): official_equivalence = some manifest's gate is true;
full_held_out_run_completed = some manifest has a variant of s/m/oracle with sha256_verified, suite
full, questions > 0 and failed == 0; judge_executed = some manifest's judge sent model requests
(``judge.params_sent.requests`` > 0; the offline lexical judge sends none) and judged > 0;
judge_prompt_parity_verified = the cross-check agrees on the pinned judge script, or some manifest's
judge.prompt_set_sha256 equals the pinned prompt set. The blocks written (only those the seed has;
none is invented): the family's ``implementation.{full_held_out_run_completed,
full_protocol_equivalence}``, ``date_transport_review.{official_equivalence,
temporal_reasoning_measured}`` (the temporal-reasoning task measured), ``qa_aggregation_review.
{judge_executed, judge_prompt_parity_verified}`` and ``official_qa_setup_review.
actual_judge_requests_executed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mnemetric.custody.inventory import fields_of, named
from mnemetric.custody.inventory_file import Inventory
from mnemetric.errors import InputError
from mnemetric.longmemeval.crosscheck import EVALUATE_QA, CrosscheckSpec
from mnemetric.longmemeval.gate import OFFICIAL, OfficialProtocol
from mnemetric.official import OfficialEquivalence
from mnemetric.records import OBJECT

DEFAULT_MANIFEST = "metrics/run.json"


@dataclass(frozen=True)
class RunManifest:
    """The keys of a V1 run manifest this review reads (module docstring table)."""

    path: str
    variant_name: str
    variant_sha256_verified: bool
    suite_name: str
    judge_prompt_set_sha256: str | None
    judge_requests: int
    questions: int
    judged: int
    failed: int
    official: OfficialEquivalence

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str) -> RunManifest:
        f = fields_of(raw, file=file, line=line, what="<manifest>")
        variant, judge, counts = f.at("variant"), f.within("judge"), f.at("counts")
        sent = judge.maybe("params_sent", OBJECT)
        requests = 0 if sent is None or "requests" not in sent else judge.at("params_sent").count("requests")
        return cls(
            path=f.string("path") if "path" in f.raw else DEFAULT_MANIFEST,
            variant_name=variant.string("name"), variant_sha256_verified=variant.boolean("sha256_verified"),
            suite_name=f.at("suite").string("name"),
            judge_prompt_set_sha256=f.at("judge").optional_string("prompt_set_sha256"), judge_requests=requests,
            questions=counts.count("questions"), judged=counts.count("judged"), failed=counts.count("failed"),
            official=OfficialEquivalence.from_record(f.raw.get("official_equivalence"), file=file, record=f.record))

    def full_held_out(self, protocol: OfficialProtocol = OFFICIAL) -> bool:
        """An official file, verified by sha256, the official (full) suite, no failed question."""
        return (self.variant_name in protocol.official_variants and self.variant_sha256_verified
                and self.suite_name == protocol.suite and self.questions > 0 and self.failed == 0)

    def judge_executed(self) -> bool:
        """The judge sent model requests and labelled questions (the lexical judge sends none)."""
        return self.judge_requests > 0 and self.judged > 0


@dataclass(frozen=True)
class Crosscheck:
    """What the review reads of a cross-check evidence file (schema ``mnemetric.crosscheck/v1``).

    ``upstream.pinned`` (bool), ``upstream.files`` (upstream path -> sha256 of the file it ran) and
    ``checks[]`` (``script``, ``agree``). Judge-prompt evidence is the checks whose script is the
    judge script's file name (evaluate_qa.py).
    """

    path: str
    pinned: bool
    evaluate_qa_sha256: str | None
    judge_checks: int
    judge_checks_agree: bool

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str = "<file>",
                    judge_script: str = EVALUATE_QA) -> Crosscheck:
        name = judge_script.rsplit("/", 1)[-1]
        f = fields_of(raw, file=file, line=line, what="<crosscheck>")
        upstream = f.at("upstream")
        files, pinned = upstream.at("files").raw, upstream.boolean("pinned")
        judge = []
        for i, c in enumerate(f.array("checks")):
            if not isinstance(c, Mapping) or not isinstance(c.get("script"), str) or not isinstance(c.get("agree"), bool):
                raise InputError(file, f"checks index {i}", "script/agree", "expected a script name and a boolean agree")
            if c["script"] == name:
                judge.append(c["agree"])
        sha = files.get(judge_script)
        return cls(path=f.string("path") if "path" in f.raw else file, pinned=pinned,
                   evaluate_qa_sha256=sha if isinstance(sha, str) else None,
                   judge_checks=len(judge), judge_checks_agree=bool(judge) and all(judge))

    def judge_prompts_verified(self, spec: CrosscheckSpec) -> bool:
        """The upstream judge script (pinned sha256) ran, and every number it gave agrees with ours."""
        pinned = spec.pinned_sha256.get(spec.judge_script)
        return self.pinned and self.evaluate_qa_sha256 == pinned and self.judge_checks_agree


def review_facts(manifests: Sequence[RunManifest], crosscheck: Crosscheck | None, spec: CrosscheckSpec,
                 protocol: OfficialProtocol = OFFICIAL) -> dict[str, bool]:
    """The derived review fields (module docstring rules)."""
    pinned = protocol.prompt_set_sha256
    return {
        "official_equivalence": any(m.official.value for m in manifests),
        "full_held_out_run_completed": any(m.full_held_out(protocol) for m in manifests),
        "judge_executed": any(m.judge_executed() for m in manifests),
        "judge_prompt_parity_verified": (crosscheck is not None and crosscheck.judge_prompts_verified(spec))
        or (pinned is not None and any(m.judge_prompt_set_sha256 == pinned for m in manifests)),
    }


def review(inv: Inventory, manifests: Sequence[Mapping[str, Any]], crosscheck: Mapping[str, Any] | None,
           *, family: str = "longmemeval", spec: CrosscheckSpec | None = None) -> Inventory:
    """V1's review blocks of ``inv`` (the derived inventory; task statuses already recomputed) written: the
    inventory with them (only the blocks the seed has)."""
    from mnemetric.longmemeval.crosscheck import CROSSCHECK

    spec = CROSSCHECK if spec is None else spec
    mine = [RunManifest.from_record(m, file=named(m, DEFAULT_MANIFEST), line=i) for i, m in enumerate(manifests)]
    check = None if crosscheck is None else Crosscheck.from_record(crosscheck, file=named(crosscheck, "<crosscheck>"),
                                                                   judge_script=spec.judge_script)
    facts = review_facts(mine, check, spec)
    v1 = inv.family(family)
    temporal = v1 is not None and any(t.task == "temporal-reasoning" and t.coverage_status == "measured"
                                      for t in v1.tasks)
    inv = inv.with_implementation(family, full_held_out_run_completed=facts["full_held_out_run_completed"],
                                  full_protocol_equivalence=facts["official_equivalence"])
    inv = inv.with_review("date_transport_review", official_equivalence=facts["official_equivalence"],
                          temporal_reasoning_measured=temporal)
    inv = inv.with_review("qa_aggregation_review", judge_executed=facts["judge_executed"],
                          judge_prompt_parity_verified=facts["judge_prompt_parity_verified"])
    return inv.with_review("official_qa_setup_review", actual_judge_requests_executed=facts["judge_executed"])
