"""Commands for retrieval: retrieve (run a memory system) and score-retrieval."""

from __future__ import annotations

import argparse
from pathlib import Path

from mnemetric.errors import MnemetricError
from mnemetric.cli.data import ADAPTERS
from mnemetric.cli.registry import Handler, command, load_option, option_path


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
    p.add_argument("--adapter", default="session-v3", choices=sorted(ADAPTERS),
                   help="session-v3: dated sessions and question; legacy-v2: the undated replay")
    p.add_argument("--conf", type=Path, default=Path("conf"),
                   help="a project's conf folder, adding its own options (memory/<NAME>.yaml) to those shipped "
                        "with Mnemetric; used when it exists")
    p.add_argument("--context-k", type=int, default=10,
                   help="at most this many retrieved items per reader context")
    p.add_argument("--context-tokens", type=int, default=6000,
                   help="reader context budget in wordpunct-v1 tokens")
    p.add_argument("--contexts", type=Path, default=None, metavar="FILE",
                   help="also write the reader contexts (JSONL, one per question)")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval.memory.base import GRANULARITIES
        if a.granularity not in GRANULARITIES:
            raise MnemetricError(f"--granularity: unknown granularity {a.granularity!r}; "
                                 "expected turn or session")
        if a.context_k < 0 or a.context_tokens < 0:
            raise MnemetricError("--context-k and --context-tokens must be >= 0")
        memory = load_memory(a.memory, a.conf)
        n = _validated_count(a.dataset)
        _write_retrieval(memory, _adapted(a.dataset, a.adapter), n, a)
        print(f"retrieve: {memory.name} ({a.granularity}) over {n} questions → {a.out}"
              + (f" (+ contexts {a.contexts})" if a.contexts else "") + _cache_note(memory))
        return 0
    return run


def memory_options(conf: Path) -> list[str]:
    """The memory option names shipped with the package plus those in <conf>/memory/."""
    from mnemetric.config import package_conf_dir
    return sorted({f.stem for d in (package_conf_dir(), conf) for f in (d / "memory").glob("*.yaml")})


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


def _adapted(dataset: Path, adapter: str):
    from mnemetric.longmemeval.adapted import SessionAdapter
    from mnemetric.longmemeval.instance import iter_instances
    adapt = SessionAdapter(adapter, ADAPTERS[adapter])
    return (adapt.adapt(inst, i) for i, inst in enumerate(iter_instances(dataset)))


def _write_retrieval(memory, records, total: int, a: argparse.Namespace) -> None:
    import contextlib
    import json

    from tqdm import tqdm

    from mnemetric.io import atomic_open
    from mnemetric.longmemeval.harness import retrieve_all
    bar = tqdm(records, total=total, desc=f"retrieve ({memory.name}, {a.granularity})", unit="q")
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(atomic_open(a.out))
        ctx = stack.enter_context(atomic_open(a.contexts)) if a.contexts else None
        for line, context in retrieve_all(memory, bar, a.granularity, a.context_k, a.context_tokens):
            log.write(json.dumps(line, ensure_ascii=False) + "\n")
            if ctx is not None:
                ctx.write(json.dumps(context, ensure_ascii=False) + "\n")


def _cache_note(memory) -> str:
    cache = getattr(memory, "cache", None)
    if cache is None or not hasattr(cache, "texts_embedded"):
        return ""
    return (f"; embeddings: {cache.texts_seen} texts seen, {cache.texts_embedded} embedded "
            f"(the rest from the cache {cache.path})")


@command("score-retrieval", "score an upstream-format retrieval log → per-question and averaged metrics",
         "Score every line of a retrieval log (upstream format, as written by `mnemetric retrieve` or by "
         "upstream run_retrieval.py) under a scoring profile. Each question's corpus is rebuilt from the "
         "line's own haystack (user turns, noans relabelling) and the metrics are recomputed from "
         "retrieval_results.ranked_items[].corpus_id; metrics stored in the log are ignored. Profiles: "
         "longmemeval-session-upstream-v1 (recall_any/recall_all/ndcg_any, equal to upstream) and "
         "mnemetric-historical (recall/ndcg, not upstream). Writes FILE.json atomically with profile, "
         "official_equivalence, granularity, per_question[question_id][level][metric] and aggregate[rule] "
         "(n, excluded and the mean [level][metric]) for both rules: exclude_abs (upstream "
         "print_retrieval_metrics.py) and exclude_abs_and_no_user_target (upstream run_retrieval.py). "
         "Prints the headline numbers. A bad line stops with its file, line, question_id and field. "
         "Example: mnemetric score-retrieval runs/log.jsonl --granularity turn "
         "--profile longmemeval-session-upstream-v1 --out runs/log.scores.json")
def _score_retrieval(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("log", type=Path, help="retrieval log (JSONL, one question per line)")
    p.add_argument("--granularity", required=True, default=argparse.SUPPRESS, metavar="{turn,session}",
                   help="the granularity the log ranks (turn logs are also scored at session level); "
                        "'auto' detects it from the ranked ids")
    p.add_argument("--profile", required=True, default=argparse.SUPPRESS, metavar="NAME",
                   help="scoring profile: longmemeval-session-upstream-v1 or mnemetric-historical")
    p.add_argument("--out", type=Path, required=True, default=argparse.SUPPRESS, metavar="FILE.json",
                   help="output metrics file (JSON)")
    p.add_argument("--reference", type=Path, default=None, metavar="REF.json",
                   help="the LongMemEval file the log was produced from; "
                        "every logged question_id must be in it")
    p.add_argument("--ks", type=_parse_ks, default="1,3,5,10,30,50", help="comma-separated cutoffs k")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval.retrieval_log import score_retrieval_log
        from mnemetric.io import write_json_atomic
        scored = score_retrieval_log(a.log, a.granularity, a.profile, a.reference, ks=a.ks)
        result = {"log": str(a.log), "profile": scored["profile"],
                  "official_equivalence": scored["official_equivalence"], "granularity": scored["granularity"],
                  "ks": list(a.ks), "reference": str(a.reference) if a.reference else None,
                  "aggregate": scored["aggregate"], "per_question": scored["per_question"],
                  "questions": scored["questions"]}
        write_json_atomic(a.out, result)
        print(_headline_table(result))
        print(f"score-retrieval: {len(result['per_question'])} questions → {a.out}")
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


def _headline_table(result: dict) -> str:
    """recall_all@5/10 and ndcg_any@5/10 (or the profile's counterparts) per rule and level."""
    levels = [lv for lv in ("session", "turn") if any(lv in r for r in result["aggregate"].values())]
    names = {m.split("@")[0] for r in result["aggregate"].values() for lv in levels for m in r.get(lv, {})}
    stems = [next((s for s in family if s in names), family[0]) for family in (("recall_all", "recall"),
                                                                              ("ndcg_any", "ndcg"))]
    ks = [k for k in result["ks"] if k in (5, 10)] or result["ks"][:2]
    cols = [f"{s}@{k}" for s in stems for k in ks]
    head = f"{'rule':<32} {'n':>5}  {'level':<8}" + "".join(f"{c:>15}" for c in cols)
    rows = [f"profile {result['profile']} (official_equivalence: {str(result['official_equivalence']).lower()}), "
            f"granularity {result['granularity']}", head]
    for rule, agg in result["aggregate"].items():
        for i, lv in enumerate(levels):
            cells = "".join(f"{fmt(agg.get(lv, {}).get(c)):>15}" for c in cols)
            rows.append(f"{rule if i == 0 else '':<32} {agg['n'] if i == 0 else '':>5}  {lv:<8}{cells}")
    return "\n".join(rows)


def fmt(value) -> str:
    return "-" if value is None else f"{value:.4f}"
