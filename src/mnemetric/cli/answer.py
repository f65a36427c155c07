"""Command answer: contexts → hypotheses with a reader (the same library function as stage answer)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mnemetric.cli.executor import add_executor_option, add_partial_option, command_executor, end_partial_command
from mnemetric.cli.registry import Handler, command, load_option, option_path
from mnemetric.cli.shards import add_run_options, run_shard
from mnemetric.cli.types import amount, count, positive_int


@command("answer", "answer every question of a contexts file with a reader → upstream hypotheses JSONL",
         "Read CONTEXTS (JSONL, one reader context per question, as `mnemetric retrieve --contexts` or the "
         "retrieve stage writes it) and ADAPTED (the adapted JSONL the contexts were made from: each question's "
         "text and date), build the reader from <conf>/reader/<NAME>.yaml with Hydra's _target_ (extractive, "
         "openai, or a path to any YAML file with a _target_), and answer each question. Writes --out (upstream "
         "hypotheses {question_id, hypothesis} plus the reader's trace fields), OUT.failures.jsonl (questions "
         "whose reply was a non-answer; always written) and the usage sidecar (--usage, default "
         "OUT.usage.json): the same files and bytes as the DVC stage answer. The llm settings come from the "
         "composed config (llm:) with the options below. Responses are cached (MNEMETRIC_CACHE_DIR): a rerun "
         "sends only what is missing. Example: mnemetric answer runs/contexts.jsonl --adapted "
         "data/adapted/sample.jsonl --reader extractive --out runs/hypotheses.jsonl")
def _answer(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("contexts", type=Path, help="reader contexts (JSONL, one per question)")
    p.add_argument("--adapted", type=Path, required=True, default=argparse.SUPPRESS, metavar="ADAPTED",
                   help="the adapted JSONL (data/adapted/<variant>.jsonl or `mnemetric adapt --out`)")
    p.add_argument("--reader", required=True, default=argparse.SUPPRESS, metavar="NAME",
                   help="reader option in <conf>/reader/ (extractive, openai) or a path to a YAML file with a _target_")
    p.add_argument("--out", type=Path, required=True, default=argparse.SUPPRESS, metavar="HYP.jsonl",
                   help="hypotheses file to write")
    p.add_argument("--usage", type=Path, default=None, metavar="FILE.json",
                   help="usage sidecar (default: OUT.usage.json)")
    p.add_argument("--conf", type=Path, default=Path("conf"), help="conf folder")
    p.add_argument("--dry-run", action="store_true", help="print how many requests would be sent and their cost; send none")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default: the reader's, else OPENAI_BASE_URL)")
    p.add_argument("--max-concurrency", type=positive_int, help="requests in flight at once")
    p.add_argument("--max-requests", type=count, help="stop before sending more than this many requests")
    p.add_argument("--max-usd", type=amount, help="stop before spending more than this many dollars")
    add_executor_option(p)
    add_run_options(p)
    add_partial_option(p)

    def run(a: argparse.Namespace) -> int:
        import json
        from contextlib import closing

        from mnemetric.config import build
        from mnemetric.llm.failures import AllQuestionsFailed, describe, failures_path
        from mnemetric.longmemeval.answer import Queries, answer_file, default_usage_path, plan_answers, write_answered

        cfg = load_option("reader", a.reader, a.conf)
        if a.base_url and "base_url" in cfg:  # only a reader that has the setting (extractive has none)
            cfg["base_url"] = a.base_url
        reader = build(cfg, str(option_path("reader", a.reader, a.conf) or f"reader={a.reader}"))
        with closing(command_executor(a)) as executor:
            if a.dry_run:  # plans from the cache only: no API key needed, nothing sent
                print(json.dumps(plan_answers(reader, a.contexts, Queries.of_adapted(a.adapted), executor), indent=2))
                return 0
            shard = run_shard(a, executor, [a.contexts])
            queries = Queries.of_adapted(a.adapted)
            if shard is None:
                answered = answer_file(reader, a.contexts, queries, executor)
            else:
                from mnemetric.longmemeval.adapted import read_adapted
                from mnemetric.longmemeval.shards import answer_shard_run, answer_sharded

                universe = [(r.eval.question_id, r.eval.question_type) for r in read_adapted(a.adapted)]
                shard = answer_shard_run(shard, cfg, a.contexts, universe, a.adapted)
                answered, lines, fails = answer_sharded(reader, a.contexts, queries, executor, shard)
        stats = executor.usage
        if answered.failures and not answered.hypotheses:
            raise AllQuestionsFailed("answer", answered.failures)
        usage = a.usage or default_usage_path(a.out)
        from mnemetric.shard import record_manifest

        record_manifest(shard, a.out, *((lines, fails) if shard is not None else (None, None)))
        work = write_answered(a.out, usage, answered, stats.work).to_record()
        if stats.requests_sent or stats.cache_hits:
            print(f"requests sent {stats.requests_sent}, cache hits {stats.cache_hits}, retries {stats.retries}, "
                  f"non-answers {stats.non_answers}, paid ${stats.usd:.4f}; cost of the work: {work['responses']} "
                  f"response(s), tokens {work['prompt_tokens']}+{work['completion_tokens']}, ${work['usd']:.4f}",
                  file=sys.stderr)
        if answered.failures:
            print(f"{len(answered.failures)} question(s) FAILED (no usable answer; not cached) → "
                  f"{failures_path(a.out)}:\n{describe(answered.failures)}", file=sys.stderr)
        print(f"answer: {reader.name}: {len(answered.hypotheses)} hypotheses, {len(answered.failures)} failed"
              + (f" (shard {shard.shard})" if shard is not None else "") + f" → {a.out} (usage: {usage})")
        end_partial_command("answer", answered.failures, len(answered.hypotheses) + len(answered.failures), a)
        return 0
    return run
