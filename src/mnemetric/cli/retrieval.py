"""Commands for retrieval: retrieve (run a memory system) and score-retrieval."""

from __future__ import annotations

import argparse
from pathlib import Path

from mnemetric.cli.data import add_adapter_options, load_adapter
from mnemetric.cli.executor import add_executor_option
from mnemetric.cli.shards import add_run_options
from mnemetric.cli.registry import Handler, command, conf_options, load_option, option_path
from mnemetric.cli.types import amount, count, positive_int


# ------------------------------------------------------------------ retrieval


@command("retrieve", "run a memory system over a LongMemEval file → upstream-format retrieval log",
         "Validate and load a LongMemEval-format file (a JSON list of instances: oracle, S, M, the bundled "
         "sample or your own), adapt every instance (--adapter), build the memory system from "
         "conf/memory/<NAME>.yaml with Hydra's _target_ (NAME may also be a path to any YAML file with a "
         "_target_, so a memory system from another package plugs in by config alone), and for each question: "
         "reset, ingest the haystack in chronological order, retrieve at the requested granularity. "
         "Writes one upstream retrievallog line per question (the upstream instance, haystack in replay "
         "order, plus retrieval_results: query, ranked_items [{corpus_id, text, timestamp}] — the corpus "
         "items the system ranked, best first; items outside the upstream corpus such as assistant turns "
         "drop out — and the upstream metrics), "
         "so upstream tools read it and `mnemetric score-retrieval` scores it. With --contexts it also "
         "writes what a reader would get: the top --context-k items within --context-tokens tokens "
         "(wordpunct-v1 tokenizer, the same budget for every system). Output files are written atomically: "
         "they either hold the complete run or are left untouched. "
         "Example: mnemetric retrieve data/sample/longmemeval_sample.json --memory bm25-upstream "
         "--granularity turn --out runs/sample_retrievallog_turn_bm25-upstream.jsonl")
def _retrieve(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("dataset", type=Path, help="a LongMemEval JSON file (a JSON list of instances)")
    p.add_argument("--memory", required=True, default=argparse.SUPPRESS, metavar="NAME",
                   help="memory option in <conf>/memory/ (bm25-upstream, bm25, dense, oracle, full-context, "
                        "none) or a path to a YAML file whose _target_ names the memory class")
    p.add_argument("--granularity", required=True, default=argparse.SUPPRESS, metavar="{turn,session}",
                   help="rank sessions or user turns (turn logs are also scored at session level)")
    p.add_argument("--out", type=Path, required=True, default=argparse.SUPPRESS, metavar="LOG",
                   help="output retrieval log (JSONL)")
    add_adapter_options(p, conf=False)
    p.add_argument("--conf", type=Path, default=Path("conf"),
                   help="a project's conf folder, adding its own options (memory/<NAME>.yaml) to those shipped "
                        "with Mnemetric; used when it exists")
    p.add_argument("--context-k", type=positive_int, default=10,
                   help="at most this many retrieved items per reader context")
    p.add_argument("--context-tokens", type=positive_int, default=6000,
                   help="reader context budget in wordpunct-v1 tokens")
    p.add_argument("--contexts", type=Path, default=None, metavar="FILE",
                   help="also write the reader contexts (JSONL, one per question)")
    add_executor_option(p)
    add_run_options(p)
    p.add_argument("--max-concurrency", type=positive_int, help="model requests in flight at once (a memory that calls models)")
    p.add_argument("--max-requests", type=count, help="stop before sending more than this many model requests")
    p.add_argument("--max-usd", type=amount, help="stop before spending more than this many dollars")
    p.add_argument("--proxy-port", type=count, default=None, metavar="PORT",
                   help="a memory system wrapping a third-party library (UsesModelProxy) gets the loopback model "
                        "proxy on 127.0.0.1:PORT (default: memory_llm.port of the composed conf, 0 = any free "
                        "port); its requests go through the response cache, budget and usage ledger to the real "
                        "endpoint ($OPENAI_BASE_URL or memory_llm.base_url, key $OPENAI_API_KEY)")
    p.add_argument("--memory-cost", type=Path, default=None, metavar="FILE.json",
                   help="also write the memory system's model cost per phase (ingest, query: requests, tokens, "
                        "dollars; metrics/detail/memory_cost.json's layout). This run's hit rate and seconds go "
                        "to the terminal and the run log")

    def run(a: argparse.Namespace) -> int:
        from contextlib import closing

        from mnemetric.cli.executor import command_executor
        from mnemetric.cli.shards import light_executor, run_shard
        from mnemetric.llm.memory_cost import finish_memory_run, serving, write_memory_cost
        from mnemetric.llm.memory_cost_file import part_ref
        from mnemetric.longmemeval.memory.base import calls_models, uses_model_proxy
        from mnemetric.longmemeval.retrieve import check_retrieval_settings, write_retrieval
        from mnemetric.shard import ShardRun
        check_retrieval_settings(a.granularity, a.context_k, a.context_tokens,
                                 keys=("--granularity", "--context-k", "--context-tokens"))
        memory = load_memory(a.memory, a.conf)
        n = _validated_count(a.dataset)
        adapter = load_adapter(a.adapter, a.conf)
        # one executor for the run (its pool runs the questions; llm: settings composed for a system calling models)
        proxied = uses_model_proxy(memory)
        with closing(command_executor(a) if calls_models(memory) or proxied else light_executor(a)) as executor:
            shard = run_shard(a, executor)
            if shard is not None:
                shard = ShardRun.start("retrieve", shard, _universe(a.dataset), data_file=a.dataset, config={
                    "memory": load_option("memory", a.memory, a.conf),
                    "adapter": load_option("adapter", a.adapter, a.conf),
                    "granularity": a.granularity, "context_k": a.context_k, "context_tokens": a.context_tokens})
            with serving(proxied, executor, _proxy_section(a) if proxied else None, memory.name) as proxy:
                n = write_retrieval(memory, _adapted(a.dataset, adapter), granularity=a.granularity,
                                    k=a.context_k, budget=a.context_tokens, log=a.out, contexts=a.contexts, total=n,
                                    executor=executor, shard=shard)
        finish_memory_run("retrieve", memory.name, proxy)
        if a.memory_cost is not None:  # a shard's record is bound to the outputs it was written beside
            write_memory_cost(a.memory_cost, memory.name, proxy,
                              part_ref(shard and shard.shard, (a.out, a.contexts)))
        print(f"retrieve: {memory.name} ({a.granularity}) over {n} questions"
              + (f" (shard {shard.shard})" if shard is not None else "") + f" → {a.out}"
              + (f" (+ contexts {a.contexts})" if a.contexts else "") + _cache_note(memory))
        return 0
    return run


def _proxy_section(a: argparse.Namespace) -> dict:
    """The composed ``memory_llm`` settings with ``--proxy-port``."""
    from mnemetric.cli.registry import composed

    section = dict(composed(a.conf).get("memory_llm") or {})
    if a.proxy_port is not None:
        section["port"] = a.proxy_port
    return section


def memory_options(conf: Path) -> list[str]:
    """The memory option names shipped with the package plus those in <conf>/memory/."""
    return conf_options("memory", conf)


def load_memory(name: str, conf: Path = Path("conf")):
    """Build a memory system from conf/memory/<name>.yaml, or from a YAML path with a _target_."""
    from mnemetric.config import build
    from mnemetric.errors import ConfigError
    from mnemetric.longmemeval.memory import MemorySystem
    cfg = load_option("memory", name, conf)
    path = option_path("memory", name, conf) or f"memory={name}"
    memory = build(cfg, str(path))
    if not isinstance(memory, MemorySystem):
        raise ConfigError(f"{path}: {cfg['_target_']} is not a memory system: it needs a `name` and the "
                          "methods reset(), ingest(session) and retrieve(query, granularity)")
    return memory


def _validated_count(dataset: Path) -> int:
    """Check the whole file first (every problem listed at once); return its instance count."""
    from mnemetric.longmemeval.instance import validate_file
    from mnemetric.errors import ValidationFailed
    n, problems = validate_file(dataset)
    if problems:
        raise ValidationFailed(str(dataset), problems)
    return n


def _universe(dataset: Path) -> list[tuple[str, str]]:
    """Every question's (question_id, question_type), in file order (what shards are dealt from)."""
    from mnemetric.longmemeval.instance import iter_instances
    return [(inst.question_id, inst.question_type) for inst in iter_instances(dataset)]


def _adapted(dataset: Path, adapt):
    from mnemetric.longmemeval.instance import iter_instances
    return (adapt.adapt(inst, i) for i, inst in enumerate(iter_instances(dataset)))


def _cache_note(memory) -> str:
    cache = getattr(memory, "cache", None)
    if cache is None or not hasattr(cache, "texts_embedded"):
        return ""
    return (f"; embeddings: {cache.texts_seen} texts seen, {cache.texts_embedded} embedded "
            f"(the rest from the cache {cache.path})")


@command("score-retrieval", "score an upstream-format retrieval log → metrics/retrieval.json's layout (+ detail)",
         "Score every line of a retrieval log (upstream format, as written by `mnemetric retrieve` or by "
         "upstream run_retrieval.py) under a scoring profile. Each question's corpus is rebuilt from the "
         "line's own haystack (user turns, noans relabelling) and the metrics are recomputed from "
         "retrieval_results.ranked_items[].corpus_id; metrics stored in the log are ignored. Profiles: "
         "longmemeval-session-upstream-v1 (recall_any/recall_all/ndcg_any, equal to upstream) and "
         "mnemetric-historical (recall/ndcg, not upstream). The same library function as the DVC stage "
         "retrieval_metrics writes the same layouts: --out gets metrics/retrieval.json's (profile, "
         "official_equivalence, memory, variant, suite, granularity, then per rule n and the headline means) "
         "and --detail (default: detail/<name> beside --out) metrics/detail/retrieval.json's (every mean per "
         "rule and level with percentile-bootstrap intervals, per_type blocks) plus per_question[question_id]"
         "[level][metric] and questions[question_id] = {question_type, has_user_target}. Both rules are kept: "
         "exclude_abs (upstream print_retrieval_metrics.py) and exclude_abs_and_no_user_target (upstream "
         "run_retrieval.py). Files are written atomically. Prints the headline numbers. A bad line stops with "
         "its file, line, question_id and field. "
         "Example: mnemetric score-retrieval runs/log.jsonl --granularity turn "
         "--profile longmemeval-session-upstream-v1 --out runs/retrieval.json")
def _score_retrieval(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("log", type=Path, help="retrieval log (JSONL, one question per line)")
    p.add_argument("--granularity", required=True, default=argparse.SUPPRESS, metavar="{turn,session}",
                   help="the granularity the log ranks (turn logs are also scored at session level); "
                        "'auto' detects it from the ranked ids")
    p.add_argument("--profile", required=True, default=argparse.SUPPRESS, metavar="NAME",
                   help="scoring profile: longmemeval-session-upstream-v1 or mnemetric-historical")
    p.add_argument("--out", type=Path, required=True, default=argparse.SUPPRESS, metavar="FILE.json",
                   help="headline metrics file (JSON, metrics/retrieval.json's layout)")
    p.add_argument("--detail", type=Path, default=None, metavar="FILE.json",
                   help="detail file (default: detail/<name of --out> beside it), with the per-question values")
    p.add_argument("--plot", type=Path, default=None, metavar="FILE.json",
                   help="also write the recall@k plot rows {granularity, k, recall}")
    p.add_argument("--reference", type=Path, default=None, metavar="REF.json",
                   help="the LongMemEval file the log was produced from; "
                        "every logged question_id must be in it")
    p.add_argument("--ks", type=_parse_ks, default="1,3,5,10,30,50", help="comma-separated cutoffs k")
    p.add_argument("--resamples", type=count, default=1000, help="bootstrap resamples (0: no intervals)")
    p.add_argument("--seed", type=count, default=0, help="bootstrap seed")
    for name in ("memory", "variant", "suite"):
        p.add_argument(f"--{name}", default=None, metavar="NAME", help=f"the {name} name to record (default null)")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.errors import ConfigError
        from mnemetric.longmemeval.scoring.score_retrieval import detail_path, write_retrieval_scores
        if a.resamples < 0:
            raise ConfigError("--resamples", f"must be an integer >= 0 (0 = no intervals), got {a.resamples}")
        detail = a.detail if a.detail is not None else detail_path(a.out)
        files = write_retrieval_scores(a.log, granularity=a.granularity, profile=a.profile, ks=a.ks,
                                       headline=a.out, detail=detail, plot=a.plot, reference=a.reference,
                                       memory=a.memory, variant=a.variant, suite=a.suite,
                                       resamples=a.resamples, seed=a.seed, per_question=True)
        print(_headline_table(files.headline))
        print(f"score-retrieval: {len(files.detail['per_question'])} questions → {a.out} (detail: {detail})")
        return 0
    return run


def _parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(x) for x in str(text).split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not ks or any(k < 1 for k in ks):
        raise argparse.ArgumentTypeError(f"cutoffs must be integers >= 1, got {text!r}")
    return tuple(dict.fromkeys(ks))


def _headline_table(headline: dict) -> str:
    """The headline means (recall_all@5/10 and ndcg_any@5/10, or the profile's counterparts) per rule and level."""
    rules = {k: v for k, v in headline.items() if isinstance(v, dict) and "n" in v}
    levels = [lv for lv in ("session", "turn") if any(lv in r for r in rules.values())]
    cols = list(dict.fromkeys(c for r in rules.values() for lv in levels for c in r.get(lv, {})))
    head = f"{'rule':<32} {'n':>5}  {'level':<8}" + "".join(f"{c:>15}" for c in cols)
    rows = [f"profile {headline['profile']} (official_equivalence: {str(headline['official_equivalence']['value']).lower()}), "
            f"granularity {headline['granularity']}", head]
    for rule, agg in rules.items():
        for i, lv in enumerate(levels):
            cells = "".join(f"{fmt(agg.get(lv, {}).get(c)):>15}" for c in cols)
            rows.append(f"{rule if i == 0 else '':<32} {agg['n'] if i == 0 else '':>5}  {lv:<8}{cells}")
    return "\n".join(rows)


def fmt(value) -> str:
    return "-" if value is None else f"{value:.4f}"
