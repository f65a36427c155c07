"""Stage suite: choose the questions of this run (data/suites/<variant>-<suite>.json)."""

from __future__ import annotations

from mnemetric.longmemeval.adapted import read_adapted
from mnemetric.params import stage_params
from mnemetric.longmemeval.suite import QuestionMeta, SuiteSpec, select, suite_record, write_suite
from mnemetric.stages import run

PARAMS = ["suite", "variant.name", "paths.adapted", "paths.suite"]


def main() -> None:
    p = stage_params(PARAMS)
    spec = SuiteSpec.from_params(p["suite"])
    questions = [QuestionMeta(r.eval.question_id, r.eval.question_type, r.eval.abstention)
                 for r in read_adapted(p["paths.adapted"])]
    ids = select(spec, questions)
    write_suite(p["paths.suite"], suite_record(spec, p["variant.name"], ids))
    print(f"suite: {spec.name}: {len(ids)} of {len(questions)} questions → {p['paths.suite']}")


if __name__ == "__main__":
    run(main)
