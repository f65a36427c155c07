"""Stage judge_audit: the run's verdicts audited → metrics/detail/judge_audit.json (the report's "Judge validity").

The judges of the matrix are the conf/judge options that ``judge_audit.judges`` names (default: the offline
lexical judge, so `make repro` stays offline and byte-reproducible). Each is shown the run's answers, the
positive and negative controls and the adversarial answers
(:mod:`mnemetric.longmemeval.judge_audit`); ``judge_audit.repeats`` fresh re-judgings per model judge give the
flip rate, their replies in a separate cache under ``<MNEMETRIC_CACHE_DIR>/judge-audit`` (never the main one).
A model judge in the list sends requests through the run's executor, budget and response cache
(``-S 'judge_audit.judges=[lexical,upstream-gpt-4o]'``): a rerun sends none. The same work as
`mnemetric judge-audit validity`; an audit is never a score, so no metric changes.
"""

from __future__ import annotations

from contextlib import closing

from mnemetric.config import build, option_spec
from mnemetric.execute import build_executor
from mnemetric.longmemeval.judge_audit.files import DEFAULT_PATH, write_judge_audit
from mnemetric.longmemeval.judge_audit.run import default_repeat_folder, repeat_executors, run_validity
from mnemetric.longmemeval.questions import read_questions
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["judge_audit", "executor", "llm", "paths.questions", "paths.judged"]


def main() -> None:
    p = stage_params(PARAMS)
    section = p["judge_audit"]
    judges = [build(option_spec("judge", name), f"params.yaml judge_audit.judges: {name}")
              for name in section["judges"]]
    refs = {q.question_id: q.reference for q in read_questions(p["paths.questions"])}
    with closing(build_executor(p["executor"], p["llm"])) as executor:
        repeat_executor = repeat_executors(p["executor"], p["llm"], default_repeat_folder(), executor)
        record = run_validity(judges, p["paths.judged"], refs, executor, repeats=section["repeats"],
                              repeat_executor=repeat_executor, reference_file=p["paths.questions"])
    write_judge_audit(DEFAULT_PATH, record)
    print(f"judge_audit: {len(record['judges'])} judge(s), {len(record['disputed'])} disputed question(s) "
          f"→ {DEFAULT_PATH}")


if __name__ == "__main__":
    run(main)
