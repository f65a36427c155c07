"""The report page's "Judge validity" section, from the judge-audit file (:mod:`.files`).

Four tables, every number as the file holds it (percentages and kappas rounded for display only):
controls acceptance per judge; adversarial acceptance per rule and judge (graded answers; "not
graded" counts shown apart); agreement with the run's verdicts and the repeat-judging flip rate per
judge; pairwise agreement of every two judges (the run's verdicts included) on the run's answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemetric.longmemeval.judge_audit.adversarial import DESCRIPTIONS
from mnemetric.longmemeval.judge_audit.files import JudgeAudit
from mnemetric.report.model import Section, Table

NOT_MEASURED = "not measured"


def _pct(block: Mapping[str, Any]) -> str:
    value = block.get("acceptance")
    return NOT_MEASURED if value is None else f"{100 * value:.1f}% ({block['accepted']}/{block['n']})"


def _kappa(block: Mapping[str, Any]) -> str:
    k, ci = block.get("kappa"), block.get("kappa_ci95")
    if k is None:
        return "undefined"
    return f"{k:.3f}" + (f" [{ci['low']:.3f}, {ci['high']:.3f}]" if ci else " (no interval)")


def _agree(block: Mapping[str, Any]) -> str:
    a = block.get("agreement")
    return NOT_MEASURED if a is None else f"{100 * a:.1f}%"


def judge_validity_section(audit: JudgeAudit) -> Section:
    raw = audit.raw
    judges = raw["judges"]
    rules = list(DESCRIPTIONS)
    controls = Table(("judge", "positive controls accepted (want 100%)", "negative controls accepted (want 0%)"),
                     tuple((j["name"], _pct(j["controls"]["positive"]), _pct(j["controls"]["negative"]))
                           for j in judges), "Controls: the gold as the answer, and another question's gold")
    adversarial = Table(("judge", *rules),
                        tuple((j["name"], *(_pct(j["adversarial"][r]) for r in rules)) for j in judges),
                        "Adversarial answers accepted (want 0%; rules: "
                        + "; ".join(f"{r}: {d}" for r, d in DESCRIPTIONS.items()) + ")")
    tolerated = [(j["name"], r, j["adversarial"][r]["tolerated"]) for j in judges for r in rules
                 if j["adversarial"][r]["tolerated"]["n"]]
    rows = []
    for j in judges:
        o, rep = j["agreement_with_run"]["overall"], j["repeat"]
        flips = j["agreement_with_run"]["flips"]
        rows.append((j["name"], str(o["n"]), _agree(o), _kappa(o),
                     f"{len(flips['yes_to_no'])} / {len(flips['no_to_yes'])}",
                     NOT_MEASURED if rep is None or rep["flip_rate"] is None
                     else f"{100 * rep['flip_rate']:.1f}% ({rep['flips']}/{rep['compared']}, {rep['repeats']} "
                          f"repeat{'' if rep['repeats'] == 1 else 's'})"))
    matrix = Table(("judge", "n", "agreement with the run", "Cohen's kappa [95% interval]", "flips yes→no / no→yes",
                    "repeat-judging flip rate"), tuple(rows), "Judge matrix: agreement with the run's verdicts",
                   numeric=(1,))
    pairwise = Table(("judge A", "judge B", "n", "agreement", "Cohen's kappa [95% interval]"),
                     tuple((p["a"], p["b"], str(p["n"]), _agree(p), _kappa(p)) for p in raw["pairwise"]),
                     "Pairwise agreement on the run's answers", numeric=(2,))
    paragraphs = [
        f"Judges measured on the run's answers ({audit.judged_file}, sha256 {audit.judged_sha256}), on controls and "
        "on adversarial answers made from the gold by fixed rules. An audit is never a score (official_equivalence "
        "false). Kappa intervals: the analytic asymptotic SE of Fleiss, Cohen & Everitt (1969), Wald, clipped to "
        "[-1, 1]; none when the SE is 0.",
        f"{len(audit.disputed)} question(s) disputed (a control or a matrix judge disagrees).",
    ]
    if tolerated:
        paragraphs.append("Not graded (upstream's temporal rubric tolerates an off-by-one count): "
                          + "; ".join(f"{n} accepted {t['accepted']}/{t['n']} ({r})" for n, r, t in tolerated) + ".")
    return Section("judge-validity", "Judge validity", tuple(paragraphs), (controls, adversarial, matrix, pairwise))
