"""The `mnemetric` command: the library for people who do not use DVC (and a few repo chores).

Every subcommand has --help. User errors print one message (file, record, field, fix) and exit
with status 2; a validation run that finds problems exits with status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from .errors import MnemetricError

Handler = Callable[[argparse.Namespace], int]
Setup = Callable[[argparse.ArgumentParser], Handler]
COMMANDS: dict[str, tuple[str, str, Setup]] = {}


def command(name: str, summary: str, description: str):
    """Register a subcommand: ``@command(...)`` over a function taking (parser) that returns its handler."""
    def wrap(setup: Setup) -> Setup:
        COMMANDS[name] = (summary, description, setup)
        return setup
    return wrap


# ------------------------------------------------------------------ data


@command("validate", "check a LongMemEval file and list every problem",
         "Validate every instance of a LongMemEval JSON file (a JSON list of instances): required fields "
         "and types, parallel haystack lists of equal length, known question types, the date format "
         "'%%Y/%%m/%%d (%%a) %%H:%%M', answer_session_ids present in the haystack, duplicate question_ids. "
         "Prints one line per problem (file: question_id or index: field: problem) and exits 1 if any.")
def _validate(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("file", type=Path, help="a LongMemEval JSON file (e.g. longmemeval_oracle.json)")

    def run(a: argparse.Namespace) -> int:
        from .data.longmemeval import validate_file
        n, problems = validate_file(a.file)
        for prob in problems:
            print(prob)
        print(f"{a.file}: {n} instances, {len(problems)} problem(s)", file=sys.stderr)
        return 1 if problems else 0
    return run


@command("adapt", "turn a LongMemEval file into adapted records (memory view | eval view)",
         "Adapt every instance with an adapter schema and write JSONL: 'session-v3' "
         "(mnemetric.longmemeval-session/v3, dated sessions and question) or 'legacy-v2' "
         "(mnemetric.longmemeval-session/v2, the undated replay). The memory half carries no labels.")
def _adapt(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("file", type=Path, help="a LongMemEval JSON file")
    p.add_argument("--adapter", default="session-v3", choices=sorted(ADAPTERS), help="adapter option (default: %(default)s)")
    p.add_argument("--out", type=Path, required=True, help="output JSONL file")

    def run(a: argparse.Namespace) -> int:
        from .adapters import SessionAdapter
        from .stages.adapt import adapt_file
        n = adapt_file(SessionAdapter(a.adapter, ADAPTERS[a.adapter]), a.file, a.out)
        print(f"{n} questions → {a.out}")
        return 0
    return run


ADAPTERS = {"session-v3": "mnemetric.longmemeval-session/v3", "legacy-v2": "mnemetric.longmemeval-session/v2"}


@command("fetch", "download a pinned LongMemEval variant and verify its sha256",
         "Download a variant file named in conf/variant/<name>.yaml from "
         "{HF_ENDPOINT}/datasets/{repo}/resolve/{revision}/{file} (HF_ENDPOINT defaults to "
         "https://huggingface.co; HF_TOKEN is sent when set), resuming a partial download, and verify its "
         "sha256 (and size when pinned). Without --out the verified file stays in the downloads folder.")
def _fetch(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("variant", help="variant name (oracle, s, m) or a path to a variant YAML")
    p.add_argument("--conf", type=Path, default=Path("conf"), help="conf folder (default: %(default)s)")
    p.add_argument("--downloads", type=Path, default=Path("data/downloads"), help="download folder (default: %(default)s)")

    def run(a: argparse.Namespace) -> int:
        import yaml

        from .data.custody import Variant
        from .data.download import fetch
        path = Path(a.variant) if a.variant.endswith(".yaml") else a.conf / "variant" / f"{a.variant}.yaml"
        if not path.exists():
            raise MnemetricError(f"{path}: no such variant file (known: {', '.join(sorted(f.stem for f in (a.conf / 'variant').glob('*.yaml')))})")
        variant = Variant.from_params(yaml.safe_load(path.read_text()))
        if variant.source != "huggingface":
            raise MnemetricError(f"variant {variant.name} is bundled ({variant.path}); nothing to download")
        out = fetch(variant.pin(), a.downloads)
        print(f"{out}: sha256 {variant.sha256} verified")
        return 0
    return run


@command("compose", "write params.yaml from conf/ exactly as `dvc exp run` composes it",
         "Compose conf/config.yaml with its defaults (plus Hydra overrides such as variant=oracle) using "
         "DVC's own compose function, and write the result. Use after editing conf/ when you want "
         "`dvc repro` (which never composes) to see the change.")
def _compose(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. variant=oracle suite=development")
    p.add_argument("--conf", type=Path, default=Path("conf"))
    p.add_argument("--out", type=Path, default=Path("params.yaml"))

    def run(a: argparse.Namespace) -> int:
        from .config import compose_to
        compose_to(a.out, a.conf, a.overrides)
        print(f"composed {a.conf} → {a.out}")
        return 0
    return run


# ------------------------------------------------------------------ retrieval


@command("retrieve", "run a memory system over a LongMemEval file → upstream-format retrieval log",
         "Validate and load a LongMemEval-format file (a JSON list of instances: oracle, S, M, the bundled "
         "sample or your own), adapt every instance (--adapter), build the memory system from "
         "conf/memory/<NAME>.yaml with Hydra's _target_ (NAME may also be a path to any YAML file with a "
         "_target_, so a memory system from another package plugs in by config alone), and for each question: "
         "reset, ingest the haystack in chronological order, retrieve at the requested granularity. "
         "Writes one upstream retrievallog line per question (the upstream instance plus "
         "retrieval_results: query, ranked_items [{corpus_id, text, timestamp}] and the upstream metrics), "
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
    p.add_argument("--conf", type=Path, default=Path("conf"), help="conf folder holding memory/<NAME>.yaml")
    p.add_argument("--context-k", type=int, default=10,
                   help="at most this many retrieved items per reader context")
    p.add_argument("--context-tokens", type=int, default=6000,
                   help="reader context budget in wordpunct-v1 tokens")
    p.add_argument("--contexts", type=Path, default=None, metavar="FILE",
                   help="also write the reader contexts (JSONL, one per question)")

    def run(a: argparse.Namespace) -> int:
        from .memory.base import GRANULARITIES
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
    """The memory option names in <conf>/memory/."""
    return sorted(f.stem for f in (conf / "memory").glob("*.yaml"))


def load_memory(name: str, conf: Path = Path("conf")):
    """Build a memory system from conf/memory/<name>.yaml, or from a YAML path with a _target_."""
    import yaml
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    from .errors import ConfigError
    from .memory import MemorySystem
    path = option_path("memory", name, conf)
    try:
        cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(cfg, dict) or "_target_" not in cfg:
        raise ConfigError(f"{path}: field '_target_': missing; name the memory class, e.g. "
                          "`_target_: mypackage.memory.MyMemory`")
    try:
        memory = instantiate(cfg, _convert_="all")
    except InstantiationException as exc:
        if isinstance(exc.__cause__, MnemetricError):
            raise exc.__cause__ from None
        raise ConfigError(f"{path}: could not build the memory system: {exc}") from None
    if not isinstance(memory, MemorySystem):
        raise ConfigError(f"{path}: {cfg['_target_']} is not a memory system: it needs a `name` and the "
                          "methods reset(), ingest(session) and retrieve(query, granularity)")
    return memory


def option_path(group: str, name: str, conf: Path) -> Path:
    """conf/<group>/<name>.yaml, or ``name`` itself when it is a path to a YAML file."""
    from .errors import ConfigError
    path = Path(name)
    if name.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise ConfigError(f"{path}: no such {group} config file")
        return path
    path = conf / group / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(f.stem for f in (conf / group).glob("*.yaml"))) or f"none found in {conf / group}"
        raise ConfigError(f"unknown {group} {name!r}; available: {known} "
                          f"(from {conf / group}; or pass a path to a YAML file)")
    return path


def _validated_count(dataset: Path) -> int:
    """Check the whole file first (every problem listed at once); return its instance count."""
    from .data.longmemeval import validate_file
    from .errors import ValidationFailed
    n, problems = validate_file(dataset)
    if problems:
        raise ValidationFailed(str(dataset), problems)
    return n


def _adapted(dataset: Path, adapter: str):
    from .adapters import SessionAdapter
    from .data.longmemeval import iter_instances
    adapt = SessionAdapter(adapter, ADAPTERS[adapter])
    return (adapt.adapt(inst, i) for i, inst in enumerate(iter_instances(dataset)))


def _write_retrieval(memory, records, total: int, a: argparse.Namespace) -> None:
    import contextlib
    import json

    from tqdm import tqdm

    from .io import atomic_open
    from .retrieval import retrieve_all
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
        from .data.retrieval_log import score_retrieval_log
        from .io import write_json_atomic
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
            cells = "".join(f"{_fmt(agg.get(lv, {}).get(c)):>15}" for c in cols)
            rows.append(f"{rule if i == 0 else '':<32} {agg['n'] if i == 0 else '':>5}  {lv:<8}{cells}")
    return "\n".join(rows)


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.4f}"


# ------------------------------------------------------------------ question answering


def _option(conf: Path, group: str, name: str) -> dict:
    """conf/<group>/<name>.yaml (or a path to a YAML file) as a plain dict."""
    import yaml

    return yaml.safe_load(option_path(group, name, conf).read_text(encoding="utf-8")) or {}


def _llm_settings(conf: Path, a: argparse.Namespace) -> dict:
    import yaml

    base = conf / "config.yaml"
    llm = dict((yaml.safe_load(base.read_text()) or {}).get("llm", {})) if base.exists() else {}
    budget = dict(llm.get("budget") or {})
    if a.max_requests is not None:
        budget["max_requests"] = a.max_requests
    if a.max_usd is not None:
        budget["max_usd"] = a.max_usd
    llm["budget"] = budget
    if a.max_concurrency is not None:
        llm["max_concurrency"] = a.max_concurrency
    return llm


@command("judge", "judge a hypothesis file exactly as upstream evaluate_qa.py (or with the lexical judge)",
         "Label every hypothesis of HYP (upstream JSONL {question_id, hypothesis}; a JSON list also works) "
         "against REF (a LongMemEval file; only question_id, question_type, question and answer are read, so a "
         "trimmed reference works). Writes HYP.eval-results-<alias> next to HYP (like upstream) unless --out: "
         "each line is the hypothesis plus autoeval_label {model, label} and Mnemetric custody fields. "
         "upstream-gpt-4o reads its prompts from upstream evaluate_qa.py at the pinned revision "
         "(MNEMETRIC_LONGMEMEVAL_DIR or --longmemeval-dir, else downloaded once), verified by sha256. "
         "Responses are cached (MNEMETRIC_CACHE_DIR): a rerun sends only what is missing.")
def _judge(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("hyp", type=Path, help="hypotheses: JSONL lines {question_id, hypothesis}")
    p.add_argument("ref", type=Path, help="reference: a LongMemEval JSON file (or JSONL)")
    p.add_argument("--judge", default="upstream-gpt-4o", help="judge option in conf/judge/ (or a YAML path)")
    p.add_argument("--out", type=Path, help="output file (default: HYP.eval-results-<alias>)")
    p.add_argument("--conf", type=Path, default=Path("conf"), help="conf folder")
    p.add_argument("--dry-run", action="store_true", help="print how many requests would be sent and their cost; send none")
    p.add_argument("--longmemeval-dir", help="a LongMemEval checkout at the pinned revision")
    p.add_argument("--evaluate-qa-sha256", help="expected sha256 of evaluate_qa.py (default: the pin; "
                   "another value makes every metric say official_equivalence false)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default: OPENAI_BASE_URL or the SDK default)")
    p.add_argument("--max-concurrency", type=int, help="requests in flight at once")
    p.add_argument("--max-requests", type=int, help="stop before sending more than this many requests")
    p.add_argument("--max-usd", type=float, help="stop before spending more than this many dollars")

    def run(a: argparse.Namespace) -> int:
        from .data.hypotheses import read_hypotheses, read_reference_minimal
        from .judge.run import Reference, check_kind, judge_lexical

        spec = _option(a.conf, "judge", a.judge)
        kind = check_kind(spec)
        hyps = [{"question_id": h.question_id, "hypothesis": h.hypothesis} for h in read_hypotheses(a.hyp)]
        refs = {r.question_id: Reference(r.question_id, r.question_type, r.question, r.answer)
                for r in read_reference_minimal(a.ref)}
        out = a.out or Path(f"{a.hyp}.eval-results-{spec['alias']}")
        if kind == "lexical":
            judged = judge_lexical(hyps, refs, str(a.hyp))
        else:
            judged = _judge_upstream(a, spec, hyps, refs)
            if judged is None:
                return 0
        from .io import write_jsonl_atomic

        write_jsonl_atomic(out, judged)
        correct = sum(j["autoeval_label"]["label"] for j in judged)
        print(f"{len(judged)} judgments → {out} (accuracy {correct / max(len(judged), 1):.4f})")
        return 0
    return run


def _judge_upstream(a: argparse.Namespace, spec: dict, hyps: list, refs: dict) -> list | None:
    import json
    import os

    from .judge.run import judge_upstream, upstream_requests
    from .judge.upstream_prompts import ENV_CHECKOUT, load_prompt_set
    from .llm.budget import UsageStats
    from .llm.cache import default_cache_dir
    from .llm.settings import client_from_params

    prompts = load_prompt_set(a.longmemeval_dir or spec.get("longmemeval_dir") or os.environ.get(ENV_CHECKOUT),
                              default_cache_dir(), expected_sha256=a.evaluate_qa_sha256 or spec["evaluate_qa_sha256"])
    stats = UsageStats()
    with client_from_params(_llm_settings(a.conf, a), a.base_url or spec.get("base_url"), stats) as client:
        if a.dry_run:
            print(json.dumps(client.plan(upstream_requests(hyps, refs, prompts, spec, str(a.hyp))), indent=2))
            return None
        judged = judge_upstream(hyps, refs, prompts, spec, client, str(a.hyp))
    print(f"requests sent {stats.requests_sent}, cache hits {stats.cache_hits}, "
          f"tokens {stats.prompt_tokens}+{stats.completion_tokens}, ${stats.usd:.4f}", file=sys.stderr)
    return judged


@command("score-qa", "aggregate a judged file exactly as upstream print_qa_metrics.py",
         "Aggregate JUDGED (JSONL lines with autoeval_label {model, label}, e.g. an upstream .eval-results-gpt-4o "
         "file) against REF (question types come from the reference, as upstream): per-type accuracy and count, "
         "task-averaged accuracy (unweighted mean of the six types), overall accuracy, abstention accuracy and "
         "count (_abs questions count in their type and in abstention). Empty buckets are null. The id sets must "
         "match exactly unless --allow-partial. Bootstrap CIs are a Mnemetric addition.")
def _score_qa(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("judged", type=Path, help="judged JSONL (…eval-results-<alias>)")
    p.add_argument("ref", type=Path, help="reference: a LongMemEval JSON file (or JSONL)")
    p.add_argument("--out", type=Path, required=True, help="metrics JSON to write")
    p.add_argument("--allow-partial", action="store_true", help="score a subset of the reference; coverage is recorded")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")

    def run(a: argparse.Namespace) -> int:
        from .data.hypotheses import read_judged, read_reference_minimal
        from .io import read_jsonl, write_json_atomic
        from .scoring.qa_report import qa_report

        judged = read_judged(a.judged)
        trace = next((rec.get("mnemetric_judge", {}) for _, rec in read_jsonl(a.judged)), {})
        types = {r.question_id: r.question_type for r in read_reference_minimal(a.ref)}
        report = qa_report(judged, types, judge=trace.get("judge", "unknown"),
                           prompt_set_sha256=trace.get("prompt_set_sha256"), source_sha256=trace.get("source_sha256"),
                           resamples=a.resamples, seed=a.seed, allow_partial=a.allow_partial, file=str(a.judged))
        write_json_atomic(a.out, report)
        for t, b in report["per_type"].items():
            print(f"{t:28s} {_fmt(b['accuracy'])} ({b['n']})")
        print(f"{'task-averaged':28s} {_fmt(report['task_averaged'])}\n{'overall':28s} {_fmt(report['overall'])}"
              f"\n{'abstention':28s} {_fmt(report['abstention']['accuracy'])} ({report['abstention']['n']})")
        return 0
    return run


@command("cache", "where the LLM and embedding caches live, and what they hold",
         "Mnemetric caches model responses (SQLite, keyed by the sha256 of the canonical request) and "
         "embeddings (keyed by sha256 of backend and text) under MNEMETRIC_CACHE_DIR (default: the user "
         "cache folder). They make reruns free and are never DVC outputs. 'path' prints the folder; "
         "'stats' counts entries per kind and model.")
def _cache(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("action", choices=["path", "stats"], help="what to show")

    def run(a: argparse.Namespace) -> int:
        import sqlite3

        from .llm.cache import default_cache_dir

        root = default_cache_dir()
        if a.action == "path":
            print(root)
            return 0
        llm, emb = root / "llm-cache.sqlite3", root / "embeddings.sqlite3"
        if llm.exists():
            with sqlite3.connect(llm) as db:
                for kind, model, n in db.execute("SELECT kind, model, COUNT(*) FROM responses GROUP BY kind, model"):
                    print(f"llm  {kind:10s} {model:32s} {n}")
        if emb.exists():
            with sqlite3.connect(emb) as db:
                print(f"embeddings {db.execute('SELECT COUNT(*) FROM embeddings').fetchone()[0]}")
        print(f"cache folder: {root}")
        return 0
    return run


# ------------------------------------------------------------------ entry point


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemetric",
        description="Mnemetric: upstream-exact, data-versioned evaluation of long-term memory (LongMemEval). "
                    "Inside the repository, `dvc repro` runs the pipeline; these commands give the same "
                    "library to people who bring their own files.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (summary, description, setup) in COMMANDS.items():
        sp = sub.add_parser(name, help=summary, description=description,
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        sp.set_defaults(handler=setup(sp))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except MnemetricError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
