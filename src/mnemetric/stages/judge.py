"""Stage judge: label every hypothesis → <hypotheses>.eval-results-<alias> (the custody record of verdicts).

Questions without a verdict (the reader's failures, carried over, and the judge's non-answers) go
to ``<judged>.failures.jsonl`` (always written); the usage sidecar holds the cost of the work.
"""

from __future__ import annotations

import os
import time

from mnemetric.longmemeval.adapted import read_adapted
from mnemetric.longmemeval.hypotheses import read_hypotheses
from mnemetric.io import write_json_atomic, write_jsonl_atomic
from mnemetric.longmemeval.judge.run import Judged, Reference, carry_failures, check_kind, judge_lexical, judge_upstream_outcome
from mnemetric.llm.budget import UsageStats
from mnemetric.llm.failures import failures_path, read_failures, write_failures
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["judge", "llm", "paths.adapted", "paths.hypotheses", "paths.judged", "paths.judge_usage"]


def main() -> None:
    p = stage_params(PARAMS)
    spec, hyp_file = p["judge"], p["paths.hypotheses"]
    hyps = [h.record for h in read_hypotheses(hyp_file)]  # validated: file, line, field
    refs = {r.eval.question_id: Reference(r.eval.question_id, r.eval.question_type, r.eval.question, r.eval.answer)
            for r in read_adapted(p["paths.adapted"])}
    carried = read_failures(failures_path(hyp_file))
    stats, start = UsageStats(), time.monotonic()
    if check_kind(spec) == "lexical":
        judged = Judged(judge_lexical(hyps, refs, hyp_file))
    else:
        from mnemetric.longmemeval.judge.upstream_prompts import ENV_CHECKOUT, load_prompt_set
        from mnemetric.llm.cache import default_cache_dir
        from mnemetric.llm.settings import client_from_params
        prompts = load_prompt_set(spec.get("longmemeval_dir") or os.environ.get(ENV_CHECKOUT), default_cache_dir(),
                                  expected_sha256=spec["evaluate_qa_sha256"])
        with client_from_params(p["llm"], spec.get("base_url"), stats, role="judge") as client:
            judged = judge_upstream_outcome(hyps, refs, prompts, spec, client, hyp_file)
    judged = carry_failures(carried, judged, hyps, refs, hyp_file)
    finish_stage_run("judge", stats, start, judged.failures, total=len(hyps) + len(carried))
    write_jsonl_atomic(p["paths.judged"], judged.lines)
    write_failures(failures_path(p["paths.judged"]), judged.failures)
    write_json_atomic(p["paths.judge_usage"], stats.work.to_dict())
    print(f"judge: {spec['name']}: {len(judged.lines)} judgments, {len(judged.failures)} failed → {p['paths.judged']}")


if __name__ == "__main__":
    run(main)
