"""Commands for question answering: judge, score-qa, and the cache."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mnemetric.cli.executor import add_executor_option, add_partial_option, command_executor, end_partial_command
from mnemetric.cli.registry import Handler, command
from mnemetric.cli.registry import load_option
from mnemetric.cli.shards import add_run_options, run_shard
from mnemetric.cli.types import amount, count, positive_int
from mnemetric.cli.retrieval import fmt


# ------------------------------------------------------------------ question answering


@command("judge", "judge a hypothesis file exactly as upstream evaluate_qa.py (or with the lexical judge)",
         "Label every hypothesis of HYP (upstream JSONL {question_id, hypothesis}; a JSON list also works) "
         "against REF (a LongMemEval file; only question_id, question_type, question and answer are read, so a "
         "trimmed reference works). Writes HYP.eval-results-<alias> next to HYP (like upstream) unless --out: "
         "each line is the hypothesis plus autoeval_label {model, label} and Mnemetric custody fields. "
         "upstream-gpt-4o reads its prompts from upstream evaluate_qa.py at the pinned revision "
         "(MNEMETRIC_LONGMEMEVAL_DIR or --longmemeval-dir, else downloaded once), verified by sha256. "
         "Responses are cached (MNEMETRIC_CACHE_DIR): a rerun sends only what is missing. Questions without a "
         "usable answer go to OUT.failures.jsonl; if any failed the command exits 3 naming the one command that "
         "re-asks only them (this one again), unless --allow-partial. --replay re-scores OUT from its stored "
         "verdicts and sends nothing; --check-model asks the judge's endpoint once whether its model is served.")
def _judge(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("hyp", type=Path, nargs="?", help="hypotheses: JSONL lines {question_id, hypothesis}")
    p.add_argument("ref", type=Path, nargs="?", help="reference: a LongMemEval JSON file (or JSONL)")
    p.add_argument("--judge", default="upstream-gpt-4o", help="judge option in conf/judge/ (or a YAML path)")
    p.add_argument("--out", type=Path, help="output file (default: HYP.eval-results-<alias>)")
    p.add_argument("--conf", type=Path, default=Path("conf"), help="conf folder")
    p.add_argument("--dry-run", action="store_true", help="print how many requests would be sent and their cost; send none")
    p.add_argument("--longmemeval-dir", help="a LongMemEval checkout at the pinned revision")
    p.add_argument("--evaluate-qa-sha256", help="expected sha256 of evaluate_qa.py (default: the pin; "
                   "another value makes every metric say official_equivalence false)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default: OPENAI_BASE_URL or the SDK default)")
    p.add_argument("--max-concurrency", type=positive_int, help="requests in flight at once")
    p.add_argument("--max-requests", type=count, help="stop before sending more than this many requests")
    p.add_argument("--max-usd", type=amount, help="stop before spending more than this many dollars")
    add_executor_option(p)
    add_run_options(p)
    add_partial_option(p)
    p.add_argument("--replay", action="store_true",
                   help="send nothing: check every stored verdict of OUT (its reply gives its label; with a model "
                        "judge its request sha256 is rebuilt) and score OUT as stage qa_metrics does; a verdict "
                        "lacking what replay needs is refused, named by file and question_id")
    p.add_argument("--check-model", action="store_true",
                   help="one cheap request (max_tokens 1, not cached) to the judge's endpoint: prints whether its "
                        "model is served (exit 0), not served (HTTP 404, exit 1) or another error (exit 2); "
                        "writes nothing; HYP and REF are not needed")

    def run(a: argparse.Namespace) -> int:
        import json
        from contextlib import closing

        from mnemetric.config import build
        from mnemetric.errors import ConfigError
        from mnemetric.llm.failures import accuracy_pair, describe, failures_path, read_failures
        from mnemetric.longmemeval.components import judge_file, write_judged
        from mnemetric.longmemeval.hypotheses import read_hypotheses
        from mnemetric.longmemeval.judge.run import check_not_all_failed
        from mnemetric.longmemeval.reference import reference_by_id

        cfg = load_option("judge", a.judge, a.conf)
        for key, value in (("longmemeval_dir", a.longmemeval_dir), ("evaluate_qa_sha256", a.evaluate_qa_sha256),
                           ("base_url", a.base_url)):
            if value and key in cfg:  # only settings this judge has (the lexical judge has none)
                cfg[key] = value
        judge = build(cfg, f"judge {a.judge}")
        if a.check_model:
            return _check_model(judge)
        if a.hyp is None or a.ref is None:
            raise ConfigError("judge", "HYP and REF are needed (only --check-model goes without them)")
        if a.replay:
            return _replay(judge, a.out or Path(f"{a.hyp}.eval-results-{judge.alias}"), a.ref)
        hyps = [h.record for h in read_hypotheses(a.hyp)]  # echoed whole, extra fields included, as upstream
        refs = reference_by_id(a.ref)
        with closing(command_executor(a)) as executor:
            if a.dry_run:  # plans from the cache only: no API key needed, nothing sent
                print(json.dumps(judge.plan(hyps, refs, str(a.hyp), executor), indent=2))
                return 0
            shard = run_shard(a, executor, [a.hyp])
            carried = read_failures(failures_path(a.hyp))
            if shard is None:
                judged = check_not_all_failed(judge_file(judge, hyps, refs, str(a.hyp), executor, carried))
            else:
                from mnemetric.longmemeval.shards import judge_shard_run, judge_sharded

                shard = judge_shard_run(shard, cfg, a.hyp, refs, a.ref)
                judged, lines, fails = judge_sharded(judge, hyps, refs, a.hyp, executor, carried, shard)
                judged = check_not_all_failed(judged)
        stats = executor.usage
        out = a.out or Path(f"{a.hyp}.eval-results-{judge.alias}")
        from mnemetric.shard import record_manifest

        record_manifest(shard, out, *((lines, fails) if shard is not None else (None, None)))
        write_judged(out, judged)
        if stats.requests_sent or stats.cache_hits:
            work = stats.work.to_dict()
            print(f"requests sent {stats.requests_sent}, cache hits {stats.cache_hits}, retries {stats.retries}, "
                  f"non-answers {stats.non_answers}, paid ${stats.usd:.4f}; cost of the work: {work['responses']} "
                  f"response(s), tokens {work['prompt_tokens']}+{work['completion_tokens']}, ${work['usd']:.4f}",
                  file=sys.stderr)
        if judged.failures:
            print(f"{len(judged.failures)} question(s) FAILED (no usable answer; not cached) → "
                  f"{failures_path(out)}:\n{describe(judged.failures)}", file=sys.stderr)
        correct = sum(bool(j["autoeval_label"]["label"]) for j in judged.lines)
        scores = accuracy_pair(correct, len(judged.lines), len(judged.failures))
        print(f"{len(judged.lines)} judgments → {out} ({scores})")
        end_partial_command("judge", judged.failures, len(judged.lines) + len(judged.failures), a, scores)
        return 0
    return run


def _check_model(judge) -> int:
    """`mnemetric judge --check-model`: the judge's model at its endpoint, served or not (writes nothing)."""
    from mnemetric.llm.check_model import check_model

    model = getattr(judge, "model", None)
    if model is None:
        print(f"judge {judge.name} calls no model: nothing to check")
        return 0
    result = check_model(model, getattr(judge, "base_url", None))
    print(result.line())
    return result.exit_code


def _replay(judge, judged: Path, ref: Path) -> int:
    """`mnemetric judge --replay`: check the stored verdicts of ``judged`` and score them; 0 requests."""
    from mnemetric.longmemeval.judge.replay import replay_judged
    from mnemetric.longmemeval.reference import reference_by_id, reference_types
    from mnemetric.longmemeval.scoring.qa_report import score_judged_file

    prompts = judge.prompts() if hasattr(judge, "prompts") else None
    replayed = replay_judged(judged, reference_by_id(ref), prompts)
    scored = score_judged_file(judged, reference_types(ref), names=dict.fromkeys(("reader", "memory", "variant", "suite")), judge=None, resamples=0, seed=0,
                               reference_file=ref, usage=None).detail.to_record()
    wrong = scored.get("failed_as_wrong")
    print(f"replay: {len(replayed.judged)} stored verdict(s) of {judged} checked ({replayed.requests_matched} by "
          f"their request sha256, {replayed.recomputed} recomputed offline); 0 requests sent")
    print(f"overall {fmt(scored['overall'])} task_averaged {fmt(scored['task_averaged'])} over {scored['n']} judged"
          + (f"; {scored['failures']['n']} failed: overall {fmt(wrong['overall'])} with them counted wrong"
             if wrong else "") + f"; official {scored['official_equivalence']['value']}")
    return 0


@command("score-qa", "aggregate a judged file exactly as upstream print_qa_metrics.py → metrics/qa.json's layout (+ detail)",
         "Aggregate JUDGED (JSONL lines with autoeval_label {model, label}, e.g. an upstream .eval-results-gpt-4o "
         "file) against REF (question types come from the reference, as upstream): per-type accuracy and count, "
         "task-averaged accuracy (unweighted mean of the six types), overall accuracy, abstention accuracy and "
         "count (_abs questions count in their type and in abstention). Empty buckets are null. The id sets must "
         "match exactly unless --allow-partial. Questions listed in JUDGED.failures.jsonl (no usable judge or reader "
         "answer) count as failed: they are in no number and make the result non-official. Bootstrap CIs are a "
         "Mnemetric addition. The same library function as the DVC stage qa_metrics writes the same layouts: "
         "--out gets metrics/qa.json's (reader, memory, variant, suite, judge, official_equivalence, overall, "
         "task_averaged, abstention, per_type, n), --detail (default: detail/<name> beside --out) "
         "metrics/detail/qa.json's (intervals, n per type, provenance, coverage, failures, cost: from --usage, "
         "else null) and --plot (default: plots/qa_per_type.json beside --out) the per-type plot rows.")
def _score_qa(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("judged", type=Path, help="judged JSONL (…eval-results-<alias>)")
    p.add_argument("ref", type=Path, help="reference: a LongMemEval JSON file (or JSONL)")
    p.add_argument("--out", type=Path, required=True, help="headline metrics JSON to write (metrics/qa.json's layout)")
    p.add_argument("--detail", type=Path, default=None, metavar="FILE.json",
                   help="detail file (default: detail/<name of --out> beside it)")
    p.add_argument("--plot", type=Path, default=None, metavar="FILE.json",
                   help="per-type plot rows (default: plots/qa_per_type.json beside --out)")
    p.add_argument("--usage", type=Path, nargs=3, default=None, metavar=("RETRIEVE", "ANSWER", "JUDGE"),
                   help="the three usage sidecars whose cost the detail's cost block sums (default: cost null)")
    p.add_argument("--allow-partial", action="store_true", help="score a subset of the reference; coverage is recorded")
    p.add_argument("--resamples", type=count, default=1000, help="bootstrap resamples (0: no intervals)")
    p.add_argument("--seed", type=count, default=0, help="bootstrap seed")
    for name in ("reader", "memory", "variant", "suite"):
        p.add_argument(f"--{name}", default=None, metavar="NAME", help=f"the {name} name to record (default null)")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.errors import ConfigError
        from mnemetric.llm.failures import describe
        from mnemetric.llm.usage import read_usage
        from mnemetric.longmemeval.reference import reference_types
        from mnemetric.longmemeval.scoring.qa_report import detail_path, score_judged_file, write_qa_files

        if a.resamples < 0:
            raise ConfigError("--resamples", f"must be an integer >= 0 (0 = no intervals), got {a.resamples}")
        types = reference_types(a.ref)
        names = {"reader": a.reader, "memory": a.memory, "variant": a.variant, "suite": a.suite}
        usage = None if a.usage is None else [read_usage(u) for u in a.usage]
        scored = score_judged_file(a.judged, types, names=names, judge=None, resamples=a.resamples, seed=a.seed,
                                   reference_file=a.ref, usage=usage, allow_partial=a.allow_partial)
        write_qa_files(a.out, scored.detail, names=names, detail_file=a.detail, plot_file=a.plot)
        report = scored.detail.to_record()
        if scored.failures:
            print(f"{len(scored.failures)} question(s) FAILED and are in no number (not official):\n"
                  f"{describe(scored.failures)}", file=sys.stderr)
        for t, b in report["per_type"].items():
            print(f"{t:28s} {fmt(b['accuracy'])} ({b['n']})")
        print(f"{'task-averaged':28s} {fmt(report['task_averaged'])}\n{'overall':28s} {fmt(report['overall'])}"
              f"\n{'abstention':28s} {fmt(report['abstention']['accuracy'])} ({report['abstention']['n']})"
              f"\nscore-qa: {report['n']} judged question(s) → {a.out} (detail: {a.detail or detail_path(a.out)})")
        return 0
    return run


@command("cache", "where the LLM and embedding caches live, what they hold; list, evict, export and import entries",
         "Mnemetric caches model responses (SQLite, keyed by the sha256 of the canonical request; each row also "
         "records the role that stored it: reader, judge or embeddings, 'unknown' for rows from before) and "
         "embeddings (keyed by sha256 of backend and text) under MNEMETRIC_CACHE_DIR (default: the user cache "
         "folder). They make reruns free and are never DVC outputs. 'path' prints the folder; 'stats' counts "
         "entries per kind, stage and model; 'list' shows entries; 'evict' removes them (a dry listing unless "
         "--yes). Evicted responses are asked again on the next run. Vectors of the dense memory's own "
         "embeddings.sqlite3 are not touched by evict. 'export FILE' writes responses and vectors to one JSONL "
         "file and 'import FILE' adds the keys the cache lacks (importing twice adds 0; a damaged or truncated "
         "file is refused, naming the line, with nothing written): how a cache moves to another machine. Keep "
         "MNEMETRIC_CACHE_DIR on a local disk, never on a network filesystem (SQLite's locking is not safe there).")
def _cache(p: argparse.ArgumentParser) -> Handler:
    from mnemetric.llm.cache import ROLES, UNKNOWN_ROLE

    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("path", help="print the cache folder")
    sub.add_parser("stats", help="count entries per kind, stage and model")
    ls = sub.add_parser("list", help="list entries (all filters must match)")
    ev = sub.add_parser("evict", help="remove entries by request hash, model or stage (dry listing without --yes)")
    stages = [*ROLES, UNKNOWN_ROLE]
    ls.add_argument("--model", help="requested or resolved model, exactly")
    ls.add_argument("--stage", choices=stages, help="the role that stored the entry")
    ls.add_argument("--key", help="request sha256 or a prefix of it")
    which = ev.add_mutually_exclusive_group(required=True)
    which.add_argument("--key", help="request sha256 or a prefix of it (at least 4 hex digits)")
    which.add_argument("--model", help="requested or resolved model, exactly")
    which.add_argument("--stage", choices=stages, help="the role that stored the entries")
    ev.add_argument("--yes", action="store_true", help="really remove them (default: only list what would go)")
    ex = sub.add_parser("export", help="write cached responses and embedding vectors to FILE (JSONL), to move them "
                                       "to another machine")
    ex.add_argument("file", type=Path, metavar="FILE")
    ex.add_argument("--model", help="only responses of this requested or resolved model")
    ex.add_argument("--stage", choices=stages, help="only responses stored by this role")
    ex.add_argument("--key", help="only responses whose request sha256 starts with this")
    ex.add_argument("--no-embeddings", action="store_true", help="leave the embedding vectors out")
    im = sub.add_parser("import", help="add the rows of an exported FILE that the cache lacks (by key; "
                                       "importing twice adds 0)")
    im.add_argument("file", type=Path, metavar="FILE")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.llm.cache import CACHE_FILENAME, default_cache_dir

        root = default_cache_dir()
        if a.action == "path":
            print(root)
            return 0
        if a.action == "stats":
            _print_stats(root)
            return 0
        if a.action in ("export", "import"):
            return _transfer(root, a)
        if not (root / CACHE_FILENAME).exists():
            print(f"no response cache at {root / CACHE_FILENAME}: nothing to {a.action}")
            return 0
        return _list_or_evict(root / CACHE_FILENAME, a)
    return run


def _transfer(root: Path, a: argparse.Namespace) -> int:
    from mnemetric.llm.cache import CACHE_FILENAME, ResponseCache
    from mnemetric.llm.transfer import export_cache, import_cache, summary

    if a.action == "import":
        print(summary("import", a.file, import_cache(a.file, root)))
        return 0
    keys = None
    if (a.model or a.stage or a.key) and (root / CACHE_FILENAME).exists():
        with ResponseCache(root / CACHE_FILENAME) as cache:
            keys = [r.key for r in cache.rows(model=a.model, stage=a.stage, key_prefix=a.key.lower() if a.key else None)]
    print(summary("export", a.file, export_cache(a.file, root, keys=keys, embeddings=not a.no_embeddings)))
    return 0


def _print_stats(root: Path) -> None:
    from mnemetric.llm.cache import CACHE_FILENAME, VECTORS_FILENAME, ResponseCache, VectorStore
    from mnemetric.llm.cache_admin import stats_lines
    from mnemetric.llm.retry import RetryPolicy

    if (root / CACHE_FILENAME).exists():
        with ResponseCache(root / CACHE_FILENAME) as cache:
            print("\n".join(stats_lines(cache, RetryPolicy().longest_request(120.0))))
    emb = root / VECTORS_FILENAME
    if emb.exists():
        store = VectorStore(emb)
        print(f"embedding vectors ({VECTORS_FILENAME}): {len(store)}")
        store.close()
    print(f"cache folder: {root}")


def _list_or_evict(path: Path, a: argparse.Namespace) -> int:
    from mnemetric.errors import ConfigError
    from mnemetric.llm.cache import ResponseCache
    from mnemetric.llm.cache_admin import list_lines

    key = a.key.lower() if a.key else None
    if key is not None and (len(key) < (4 if a.action == "evict" else 1) or any(c not in "0123456789abcdef" for c in key)):
        raise ConfigError("--key", f"expected a request sha256 or a prefix of at least 4 hex digits, got {a.key!r}",
                          fix="copy the key from `mnemetric cache list`")
    with ResponseCache(path) as cache:
        rows = cache.rows(model=a.model, stage=a.stage, key_prefix=key)
        print("\n".join(list_lines(rows)))
        if a.action == "list":
            return 0
        if not a.yes:
            print(f"dry run: {len(rows)} entr{'y' if len(rows) == 1 else 'ies'} would be evicted; "
                  "rerun with --yes to evict them")
            return 0
        removed = cache.delete([r.key for r in rows])
    print(f"evicted {removed} entr{'y' if removed == 1 else 'ies'} from {path}")
    return 0
