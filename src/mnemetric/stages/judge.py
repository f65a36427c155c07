"""Stage judge: label every hypothesis → <hypotheses>.eval-results-<alias> (the custody record of verdicts)."""

from __future__ import annotations

import os
import time

from ..adapters import read_adapted
from ..data.hypotheses import read_hypotheses
from ..io import write_json_atomic, write_jsonl_atomic
from ..judge.run import Reference, check_kind, judge_lexical, judge_upstream
from ..llm.budget import UsageStats
from ..params import stage_params
from . import run

PARAMS = ["judge", "llm", "paths.adapted", "paths.hypotheses", "paths.judged", "paths.judge_usage"]


def main() -> None:
    p = stage_params(PARAMS)
    spec = p["judge"]
    hyps = [h.record for h in read_hypotheses(p["paths.hypotheses"])]  # validated: file, line, field
    refs = {r.eval.question_id: Reference(r.eval.question_id, r.eval.question_type, r.eval.question, r.eval.answer)
            for r in read_adapted(p["paths.adapted"])}
    stats, start = UsageStats(), time.monotonic()
    if check_kind(spec) == "lexical":
        judged = judge_lexical(hyps, refs, p["paths.hypotheses"])
    else:
        from ..judge.upstream_prompts import ENV_CHECKOUT, load_prompt_set
        from ..llm.cache import default_cache_dir
        from ..llm.settings import client_from_params
        prompts = load_prompt_set(spec.get("longmemeval_dir") or os.environ.get(ENV_CHECKOUT), default_cache_dir(),
                                  expected_sha256=spec["evaluate_qa_sha256"])
        with client_from_params(p["llm"], spec.get("base_url"), stats) as client:
            judged = judge_upstream(hyps, refs, prompts, spec, client, p["paths.hypotheses"])
    write_jsonl_atomic(p["paths.judged"], judged)
    write_json_atomic(p["paths.judge_usage"], stats.to_dict() | {"seconds": time.monotonic() - start})
    print(f"judge: {spec['name']}: {len(judged)} judgments → {p['paths.judged']}")


if __name__ == "__main__":
    run(main)
