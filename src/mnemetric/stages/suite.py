"""Stage suite: choose the questions of this run, from one pass over the adapted file.

Writes the suite (data/suites/<variant>-<suite>.json), the question index of the variant
(data/suites/<variant>.index.jsonl, every question: type, abstention, haystack size) and the
questions file (data/suites/<variant>-<suite>.questions.jsonl, the eval view of the suite's
questions), so that no stage after it but retrieve reads the adapted file.
"""

from __future__ import annotations

from mnemetric.longmemeval.adapted import read_adapted
from mnemetric.longmemeval.questions import Question, write_questions
from mnemetric.longmemeval.suite import (
    QuestionMeta,
    SuiteSpec,
    select,
    suite_record,
    write_question_index,
    write_suite,
)
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["suite", "variant.name", "paths.adapted", "paths.suite", "paths.questions", "paths.question_index"]


def main() -> None:
    p = stage_params(PARAMS)
    spec = SuiteSpec.from_params(p["suite"])
    index, questions = [], {}
    for r in read_adapted(p["paths.adapted"]):
        index.append(QuestionMeta.of_adapted(r))
        questions[r.eval.question_id] = Question.of_adapted(r)
    ids = select(spec, index)
    write_suite(p["paths.suite"], suite_record(spec, p["variant.name"], ids))
    write_question_index(p["paths.question_index"], index)
    write_questions(p["paths.questions"], (questions[q] for q in ids))
    print(f"suite: {spec.name}: {len(ids)} of {len(index)} questions → {p['paths.suite']}, {p['paths.questions']}")


if __name__ == "__main__":
    run(main)
