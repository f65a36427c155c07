"""LongMemEval-V2 commands: the ``mnemetric v2`` group — aggregate, combine, lafs (upstream-exact, pure, no model
calls) and run (a whole evaluation); validate is in v2_data. The older spellings v2-aggregate, v2-combine,
v2-lafs stay as aliases."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mnemetric.errors import ConfigError
from mnemetric.cli.executor import add_executor_option, add_partial_option, end_partial_command
from mnemetric.cli.registry import Handler, command, group, subcommand
from mnemetric.cli.types import amount, count, positive_int

group("v2", "LongMemEval-V2: validate, run, aggregate, combine, lafs, compare",
      "LongMemEval-V2 commands. `mnemetric v2 run` runs a whole evaluation (memory, reader, checkers, "
      "aggregation, web + enterprise combination, LAFS); validate / aggregate / combine / lafs work on files "
      "you bring (upstream formats).")


def both(name: str, summary: str, description: str):
    """Register ``mnemetric v2 NAME`` and its alias ``mnemetric v2-NAME``."""
    def wrap(setup):
        subcommand("v2", name, summary, description)(setup)
        return command(f"v2-{name}", summary, description)(setup)
    return wrap

_UPSTREAM = "xiaowu0162/LongMemEval-V2 at be15ea6"


def _shipped(group: str) -> str:
    """The option names the package ships in conf/v2/<group>/ (for help texts; --conf adds a project's)."""
    from mnemetric.config import package_conf_dir

    return ", ".join(sorted(p.stem for p in (package_conf_dir() / "v2" / group).glob("*.yaml")))


@both("aggregate", "aggregated_metrics.json from a LongMemEval-V2 per_question.jsonl, as upstream's harness",
         "Compute aggregated_metrics.json from PER_QUESTION (an upstream-format per_question.jsonl: one JSON object "
         f"per line, every upstream key) exactly as evaluation/harness.py of {_UPSTREAM} does: overall, the "
         "by-category breakdowns (fractions in [0, 1]), tokens, memory_context, memory_query / memory_post_query "
         "(avg, p50 = sorted[n//2], p95 = sorted[min(n-1, int(0.95n))], max, total), shared_haystack. "
         "Written with indent 2 and ASCII escapes, as upstream. Unlike upstream, completed_at_utc is written only "
         "with --completed-at-utc (outputs stay a pure function of the input). Rows marked \"failed\" by Mnemetric "
         "are left out of every number and listed in a separate \"mnemetric\" block. "
         "Example: mnemetric v2 aggregate runs/rag_web_small/per_question.jsonl --out agg_web.json")
def _aggregate(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("per_question", type=Path, help="per_question.jsonl (upstream format)")
    p.add_argument("--out", type=Path, required=True, help="aggregated_metrics JSON to write")
    p.add_argument("--completed-at-utc", help="value of completed_at_utc (default: the key is left out)")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval_v2.aggregate import aggregate_file
        from mnemetric.longmemeval_v2.aggregated import write_aggregated

        agg = aggregate_file(a.per_question, completed_at_utc=a.completed_at_utc)
        write_aggregated(a.out, agg)
        failed = agg.failed.failed_count if agg.failed is not None else 0
        print(f"{agg.overall.count_all_questions} questions scored ({failed} failed, left out) → {a.out}: "
              f"overall_full_set {agg.overall.overall_full_set!r}")
        return 0
    return run


@both("combine", "combine web + enterprise aggregated_metrics.json as upstream's leaderboard script",
         "Combine WEB and ENTERPRISE (two aggregated_metrics.json of one method at one tier) exactly as "
         f"leaderboard/combine_aggregated_metrics.py of {_UPSTREAM}: overall scores weighted by their counts, "
         "breakdowns by count, token totals summed (avg = total / all questions), timing reduced to avg/max/total "
         "(p50 and p95 are dropped), combined_from = the two paths as given. Unlike upstream, combined_at_utc is "
         "written only with --combined-at-utc. Each input must be a whole aggregated_metrics.json in the harness's "
         "layout (every section and field, no other key; stricter than upstream's script, which fills in what is "
         "missing): one that is not is refused with its file, section and field named. "
         "Example: mnemetric v2 combine agg_web.json agg_enterprise.json --out combined.json")
def _combine(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("web", type=Path, help="the web domain's aggregated_metrics.json")
    p.add_argument("enterprise", type=Path, help="the enterprise domain's aggregated_metrics.json")
    p.add_argument("--out", type=Path, required=True, help="combined metrics JSON to write")
    p.add_argument("--combined-at-utc", help="value of combined_at_utc (default: the key is left out)")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval_v2.aggregated import read_aggregated, write_combined
        from mnemetric.longmemeval_v2.combine import combine_metrics

        combined = combine_metrics(read_aggregated(a.web), read_aggregated(a.enterprise),
                                   sources=(str(a.web), str(a.enterprise)), combined_at_utc=a.combined_at_utc)
        write_combined(a.out, combined)
        o = combined.overall
        print(f"{o.count_all_questions} questions → {a.out}: overall_full_set {o.overall_full_set!r}, "
              f"memory_query avg_seconds {combined.memory_query['avg_seconds']!r}")
        return 0
    return run


def parse_point(text: str) -> tuple[float, float, str]:
    """``ACC@LATENCY`` (percentage points @ seconds, e.g. ``62@15``) → (accuracy, latency, text)."""
    acc, sep, latency = text.partition("@")
    try:
        if not sep:
            raise ValueError
        return float(acc), float(latency.strip().removesuffix("s")), text
    except ValueError:
        raise ConfigError(f"point {text!r}", "expected ACC@LATENCY, e.g. 62@15 (62 percentage points at 15 s)",
                          fix="accuracy = overall_full_set x 100; latency = memory_query avg_seconds") from None


def _print_lafs(summary: dict, alone: float) -> None:
    print(f"tier {summary['tier']}: T in [{summary['t_min_seconds']:g}, {summary['t_max_seconds']:g}] s, "
          f"floor {summary['floor_accuracy']:g}")
    print(f"reference LAFS            {summary['reference_lafs']!r}")
    print(f"LAFS (reference ∪ points) {summary['submission_lafs']!r}")
    print(f"LAFS gain                 {summary['lafs_gain']!r}")
    print(f"LAFS of the points alone  {alone!r}")
    print("frontier (reference ∪ points):")
    for p in summary["submission_frontier"]:
        print(f"  {p['accuracy']:>6g} @ {p['latency_seconds']:<8g} s  {p['name']}")


@both("lafs", "LAFS and LAFS gain of operating points against the LongMemEval-V2 reference frontier",
         f"Compute the latency-aware frontier score of leaderboard/compute_lafs.py ({_UPSTREAM}): the exact "
         "log-latency integral of the best accuracy reachable within T, T from 1 s to 200 s, floor 0. Each POINT "
         "is ACC@LATENCY with ACC in percentage points (overall_full_set x 100) and LATENCY the combined "
         "memory_query avg_seconds (> 0). Prints the reference LAFS of the tier, LAFS of reference ∪ points, the "
         "gain, the points' own LAFS and the frontier; --json prints upstream's lafs summary object plus "
         "points_alone_lafs. Example: mnemetric v2 lafs --tier small 62@15 73.5@70")
def _lafs(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("points", nargs="*", metavar="ACC@LATENCY", help="operating points, e.g. 62@15")
    p.add_argument("--tier", required=True, choices=["small", "medium"], help="which reference frontier")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval_v2.lafs import lafs, lafs_summary

        points = [parse_point(t) for t in a.points]
        summary = lafs_summary(a.tier, points)
        alone = lafs(points)
        if a.json:
            print(json.dumps(summary | {"points_alone_lafs": alone}, indent=2, ensure_ascii=True))
        else:
            _print_lafs(summary, alone)
        return 0
    return run


def _shard_spec(text: str):
    from mnemetric.cli.shards import shard_spec

    return shard_spec(text)


def _haystack(root: Path, given: str) -> str | Path:
    from mnemetric.longmemeval_v2.haystacks import TIERS

    if given in TIERS:
        return given
    path = Path(given)
    return root / path if not path.is_absolute() and not path.exists() and (root / path).exists() else path


@subcommand("v2", "run", "run a whole LongMemEval-V2 evaluation: memory, reader, checkers, metrics, LAFS",
            "Run MEMORY over every question of DATA_ROOT (both domains unless --domain), with the haystack "
            "--haystack (small, medium or a file; a relative file is tried as given, then under DATA_ROOT): "
            "validate the data, build the memory by the shared-haystack rule, query it (latency timed as "
            "upstream), cut the items to the token budget, ask the reader, score with upstream's checkers, and "
            "write OUT/<domain>/per_question.jsonl and aggregated_metrics.json (upstream layouts), "
            "OUT/combined_aggregated_metrics.json (web + enterprise) and OUT/v2.json (Mnemetric summary: "
            "intervals, LAFS gain, official_equivalence with reasons), each atomically; OUT/usage.json holds the "
            "cost of the work and the run log the counters. Every model call (a memory that declares use_executor, "
            "e.g. dense with backend openai; the reader and LLM checkers) goes through ONE executor: one budget "
            "(--max-requests, --max-usd) and one usage ledger for the whole run; upstream's rag and agentrunbook_r "
            "baselines' own OpenAI clients reach it through the loopback model proxy (their requests per phase: "
            "OUT/memory_cost.json). "
            "Before use, every data file is checked against the data root's custody record (--custody; by default "
            "the data/custody/v2-*.json that names DATA_ROOT): a changed file stops the run, named; with no record "
            "the data counts as not verified, and only verified official data can make the run official. "
            "--reader offline / --checker offline / --token-counter o200k run with no model and no network "
            "(not official). Example: mnemetric v2 run data/sample-v2 --haystack small --memory bm25 "
            "--reader offline --checker offline --out runs/v2-sample")
def _run(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("data_root", type=Path, help="a LongMemEval-V2 data root (e.g. data/sample-v2)")
    p.add_argument("--haystack", required=True, help="small, medium, or a haystack JSON file")
    p.add_argument("--conf", type=Path, default=Path("conf"),
                   help="a project's conf folder: its v2/<group>/<NAME>.yaml options (memory, reader, checker, "
                        "token_counter) are found before those shipped with the package (default ./conf)")
    p.add_argument("--memory", required=True,
                   help=f"memory option in <conf>/v2/memory/ (shipped: {_shipped('memory')}; ours are baselines)")
    p.add_argument("--top-k", type=positive_int, default=10, help="states returned by bm25 / dense")
    p.add_argument("--reader", default="offline",
                   help=f"reader option in <conf>/v2/reader/ (shipped: {_shipped('reader')})")
    p.add_argument("--reader-model", default="Qwen/Qwen3.5-9B")
    p.add_argument("--reader-base-url", default=None, help="OpenAI-compatible server (default $OPENAI_BASE_URL)")
    p.add_argument("--no-thinking", action="store_true", help="send enable_thinking=false (Qwen/Qwen3.5-9B only)")
    p.add_argument("--checker", default="offline",
                   help=f"checker option in <conf>/v2/checker/ (shipped: {_shipped('checker')})")
    p.add_argument("--judge-model", default="gpt-5.2")
    p.add_argument("--judge-base-url", default=None)
    p.add_argument("--concurrency", type=positive_int, default=16)
    p.add_argument("--max-requests", type=count, default=None,
                   help="budget: uncached requests of the whole run, reader and checkers together (default 5000)")
    p.add_argument("--max-usd", type=amount, default=None, help="budget: dollars of the whole run (default 50)")
    p.add_argument("--custody", type=Path, default=None,
                   help="the data root's custody record (default: the data/custody/v2-*.json that names DATA_ROOT)")
    p.add_argument("--token-counter", default="auto",
                   help=f"token_counter option in <conf>/v2/token_counter/ (shipped: {_shipped('token_counter')}). "
                        "qwen: the official Qwen/Qwen3.5-9B processor (local only); o200k: offline stand-in; "
                        "auto: qwen when available, else o200k (the run is then not official)")
    p.add_argument("--processor-path", default=None, help="local folder of the Qwen/Qwen3.5-9B processor")
    p.add_argument("--max-tokens", type=positive_int, default=200_000, help="memory-context token budget")
    p.add_argument("--domain", action="append", choices=["web", "enterprise"], default=None,
                   help="run only this domain (repeatable; default both)")
    p.add_argument("--no-images", action="store_true", help="do not require images to exist")
    p.add_argument("--question-ids", default=None, metavar="ID[,ID...]",
                   help="ask only these questions (comma-separated ids of questions.jsonl; an unknown id is an error)")
    p.add_argument("--per-type", type=positive_int, default=None, metavar="N",
                   help="stratified development subset: the first N questions of each question type, per domain")
    p.add_argument("--limit", type=positive_int, default=None, metavar="N",
                   help="the first N questions per domain (after --question-ids / --per-type), as upstream's --limit; "
                        "any subset is marked not official")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="build per-question memories (haystack medium) on N worker processes (default: one, "
                        "sequential, as upstream; with N > 1, or --executor dask whatever N, the measured "
                        "latencies are of concurrent queries, timed on the workers; a memory that calls models "
                        "through the run's executor, e.g. dense, is built here whatever N)")
    p.add_argument("--shard", type=_shard_spec, default=None, metavar="K/N",
                   help="run shard K of N of the chosen questions (deterministic, stratified by domain and question "
                        "type; each row keeps the whole run's index) and write OUT/shard.json; join the N folders "
                        "with `mnemetric merge --out OUT PART...`: the unsharded run's files but the measured "
                        "query seconds (and what is computed from them) and run_args.json's start time "
                        "(SLURM: --shard $SLURM_ARRAY_TASK_ID/N; Kubernetes: --shard $((JOB_COMPLETION_INDEX + 1))/N)")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    add_partial_option(p)
    add_executor_option(p)  # batch: the reader's and checkers' calls by the Batch API (timed queries stay live)

    def run(a: argparse.Namespace) -> int:
        import time
        from datetime import datetime, timezone

        from mnemetric.cli.shards import light_executor
        from mnemetric.io import write_json_atomic
        from mnemetric.llm.run_log import finish_stage_run
        from mnemetric.llm.usage import write_usage
        from mnemetric.longmemeval_v2.data_custody import find_custody, verify_root
        from mnemetric.longmemeval_v2.pipeline import named_settings, run_from_settings
        from mnemetric.longmemeval_v2.run import write_run
        from mnemetric.longmemeval_v2.selection import Selection
        from mnemetric.longmemeval_v2.shards import record_part, shard_reason, shard_run

        custody = a.custody or find_custody(Path("data/custody"), a.data_root)
        data = verify_root(custody, a.data_root) if custody is not None else None
        if data is None:
            print(f"note: no custody record names {a.data_root} (pass --custody): the data counts as not verified",
                  file=sys.stderr)
        budget = {k: v for k, v in (("max_requests", a.max_requests), ("max_usd", a.max_usd)) if v is not None}
        llm = {"max_concurrency": a.concurrency, **({"budget": budget} if budget else {})}
        executor, start = light_executor(a, llm), time.monotonic()
        shard = a.shard or getattr(executor, "shard", None)
        started_at_utc = datetime.now(timezone.utc).isoformat()  # run_args.json (untracked run folder only)
        try:
            settings = named_settings(
                a.data_root, _haystack(a.data_root, a.haystack), memory=a.memory, memory_options={"top_k": a.top_k},
                domains=a.domain or ("web", "enterprise"), reader=a.reader, reader_model=a.reader_model,
                reader_base_url=a.reader_base_url, enable_thinking=not a.no_thinking, checker=a.checker,
                judge_model=a.judge_model, judge_base_url=a.judge_base_url, token_counter=a.token_counter,
                processor_path=a.processor_path, max_tokens=a.max_tokens, check_images=not a.no_images,
                conf=a.conf if a.conf.is_dir() else None)
            select = Selection.of({"question_ids": [i.strip() for i in a.question_ids.split(",") if i.strip()]
                                   if a.question_ids is not None else None, "per_type": a.per_type, "limit": a.limit})
            part = shard_run(shard, settings, select, data)
            result = run_from_settings(settings, executor, data=data, select=select,
                                       keep=part.keep if part is not None else None, shard_reason=shard_reason(part))
            finish_stage_run("v2 run", executor.usage, start)
            written = write_run(a.out, result, settings, started_at_utc=started_at_utc)
            write_usage(a.out / "usage.json", executor.usage.work)
            if result.memory_cost is not None:  # a UsesModelProxy memory's requests per phase
                write_json_atomic(a.out / "memory_cost.json", result.memory_cost)
                written.append(a.out / "memory_cost.json")
            manifest = record_part(a.out, result, settings, part, select=select, data=data)
            written += [manifest] if manifest is not None else []
        finally:
            executor.close()
        for path in [*written, a.out / "usage.json"]:
            print(path)
        s = result.summary
        for reason in s.official_equivalence.reasons:
            if reason.startswith("official token counter unavailable"):
                print(f"note: {reason}", file=sys.stderr)
        block = s.headline
        acc = block.accuracy["overall_full_set"]
        print(f"overall_full_set {acc.value!r} ({acc.correct}/{acc.n}), failed {block.failed}, "
              f"official {s.official_equivalence.value}", file=sys.stderr)
        from mnemetric.llm.failures import QuestionFailure, accuracy_pair

        failures = [QuestionFailure(r.question_id, "v2 run", r.failed, None, "-")
                    for rows in result.rows.values() for r in rows if r.failed]
        end_partial_command("v2 run", failures, sum(len(rows) for rows in result.rows.values()), a,
                            accuracy_pair(acc.correct, acc.n, len(failures)) if failures else "")
        return 0
    return run


@subcommand("v2", "compare", "paired accuracy difference between two LongMemEval-V2 runs; latency apart",
            "Compare run B against run A on the same questions. A and B are `mnemetric v2 run` output folders "
            "(<domain>/per_question.jsonl) or one domain's per_question.jsonl (upstream format; the domain from "
            "--domain or the folder name: web, enterprise, or upstream's <method>_<domain>_<tier>). Refuses runs "
            "that do not hold the same questions (domains, ids, question fields, haystack), naming what differs. "
            "Accuracy (score) B - A overall, without / with abstention questions, per domain and per category: a "
            "score interval for paired proportions (Tango; the paired bootstrap one in the JSON) and the exact "
            "McNemar p; questions failed in either run are left out and "
            "listed. Query latency p50 / p95 (upstream's rules) and its B - A are reported apart, never mixed "
            "into accuracy. Example: mnemetric v2 compare runs/v2-bm25 runs/v2-dense --out compare.json")
def _compare(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("a", metavar="A", type=Path, help="baseline run (folder or per_question.jsonl)")
    p.add_argument("b", metavar="B", type=Path, help="candidate run (folder or per_question.jsonl)")
    p.add_argument("--domain", choices=["web", "enterprise"], default=None,
                   help="the domain of a bare per_question.jsonl, or compare only this domain of two run folders")
    p.add_argument("--json", action="store_true", help="print the whole comparison as JSON instead of tables")
    p.add_argument("--out", type=Path, default=None, help="also write the comparison JSON here (atomically)")
    p.add_argument("--resamples", type=positive_int, default=1000, help="bootstrap resamples")
    p.add_argument("--seed", type=count, default=0, help="bootstrap seed")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.io import write_json_atomic
        from mnemetric.longmemeval_v2.compare import compare_v2, read_run, render_table

        result = compare_v2(read_run(a.a, a.domain), read_run(a.b, a.domain), resamples=a.resamples, seed=a.seed)
        if a.out is not None:
            write_json_atomic(a.out, result)
        print(json.dumps(result, indent=2) if a.json else render_table(result))
        return 0
    return run
