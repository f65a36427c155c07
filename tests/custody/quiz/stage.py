"""Stage quiz (Quiz's own door, tests/custody/quiz/stages.yaml): answer the exam through the run's executor.

Reads params ``quiz``, ``executor`` and ``llm``; builds the reader by ``_target_`` and ONE executor
(:func:`mnemetric.execute.build_executor`); writes the answers and metrics/quiz.json (:func:`run_quiz`).
"""

from __future__ import annotations

from contextlib import closing

from mnemetric.config import build
from mnemetric.execute import build_executor
from mnemetric.params import nest, stage_params
from mnemetric.stages import run

from tests.custody.quiz.family import run_quiz

PARAMS = ["quiz", "executor", "llm"]


def main() -> None:
    p = nest(stage_params(PARAMS))
    reader = build(p["quiz"]["reader"], "quiz.reader")
    with closing(build_executor(p["executor"], p["llm"], progress=False)) as executor:
        metrics = run_quiz(p, executor, reader)
    print(f"quiz: recall {metrics['recall']['acc']:.4f} over {metrics['recall']['n']} → metrics/quiz.json")


if __name__ == "__main__":
    run(main)
