"""Command `mnemetric judge-audit`: the judge as a measured instrument (bridge | validity)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mnemetric.cli.executor import add_executor_option, command_executor, executor_parts
from mnemetric.cli.registry import Handler, command, load_option
from mnemetric.cli.types import amount, count, positive_int


def kappa_threshold(text: str) -> float:
    """A kappa threshold: a number in [-1, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [-1, 1], got {text!r}") from None
    if not -1.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [-1, 1], got {text!r}")
    return value


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("judged", type=Path, help="a judged file (…eval-results-<alias>): the frozen hypotheses and "
                   "the verdicts of record")
    p.add_argument("ref", type=Path, help="reference: the LongMemEval file the hypotheses answer")
    p.add_argument("--base-url", help="OpenAI-compatible base URL for the model judges (default: each judge's, "
                   "else OPENAI_BASE_URL)")
    p.add_argument("--conf", type=Path, default=Path("conf"), help="conf folder")
    p.add_argument("--longmemeval-dir", help="a LongMemEval checkout at the pinned revision (upstream prompts)")
    p.add_argument("--evaluate-qa-sha256", help="expected sha256 of evaluate_qa.py (default: the pin)")
    p.add_argument("--max-concurrency", type=positive_int, help="requests in flight at once")
    p.add_argument("--max-requests", type=count, help="stop before sending more than this many requests")
    p.add_argument("--max-usd", type=amount, help="stop before spending more than this many dollars")
    add_executor_option(p)


def build_judges(a: argparse.Namespace, names: list[str], models: list[str]) -> list[Any]:
    """Each judge option (conf/judge/ name or YAML path) once per ``models`` entry when it calls a model
    (none given: its own model), with ``--base-url`` and the upstream-prompt settings applied."""
    from mnemetric.config import build

    out = []
    for name in names:
        cfg = load_option("judge", name, a.conf)
        for key, value in (("longmemeval_dir", a.longmemeval_dir), ("evaluate_qa_sha256", a.evaluate_qa_sha256),
                           ("base_url", a.base_url)):
            if value and key in cfg:  # only settings this judge has (the lexical judge has none)
                cfg[key] = value
        for model in (models or [None]) if "model" in cfg else [None]:
            out.append(build(cfg | ({"model": model} if model else {}), f"judge {name}"))
    return out


@command("judge-audit", "measure the judge: a successor bridge, controls, adversarial answers, a judge matrix",
         "bridge: re-judge the frozen hypotheses of JUDGED with a candidate judge (--judge NAME|YAML, --model, "
         "--base-url: any OpenAI-compatible server) and report, per question type and overall, raw agreement and "
         "Cohen's kappa with a 95% interval (the analytic asymptotic SE of Fleiss, Cohen & Everitt 1969; Wald, "
         "clipped to [-1, 1]) against JUDGED's verdicts, with the flip lists (yes->no, no->yes). The candidate is "
         "'bridged' when overall kappa >= --min-kappa (default 0.8) and it judged every question; a bridged judge "
         "is never official. validity: show every judge of the matrix (--judge, repeatable, x --model, "
         "repeatable) the run's answers, positive controls (the gold as the answer), negative controls (another "
         "question's gold, chosen deterministically) and adversarial answers made from the gold by fixed rules "
         "(vague, hedged, contradicted, off_by_one_date); report acceptance, agreement with the run's verdicts, "
         "pairwise agreement and, with --repeats N, the flip rate of N fresh re-judgings whose replies go to a "
         "separate cache (--repeat-cache; the main response cache is neither read nor written by them). "
         "Writes --out (default metrics/detail/judge_audit.json; `mnemetric report --judge-audit FILE` shows it). "
         "Model calls go through the run's executor and the response cache, like `mnemetric judge`.")
def _judge_audit(p: argparse.ArgumentParser) -> Handler:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    br = sub.add_parser("bridge", help="a candidate judge's agreement with the verdicts of record")
    _common(br)
    br.add_argument("--judge", required=True, help="the candidate: a judge option in conf/judge/ or a YAML path")
    br.add_argument("--model", help="the candidate's model (overrides the option's)")
    br.add_argument("--min-kappa", type=kappa_threshold, default=None,
                    help="overall Cohen's kappa needed to call the candidate bridged (default 0.8)")
    br.add_argument("--out", type=Path, required=True, help="the bridge record (JSON) to write")
    br.add_argument("--judged-out", type=Path, help="also write the candidate's judged file (upstream format)")
    va = sub.add_parser("validity", help="controls, adversarial answers, a judge matrix and the flip rate")
    _common(va)
    va.add_argument("--judge", action="append", dest="judges", metavar="NAME|YAML",
                    help="a judge of the matrix (repeatable; default: lexical)")
    va.add_argument("--model", action="append", dest="models", metavar="MODEL",
                    help="a model for every model judge of the matrix (repeatable; default: each judge's own)")
    va.add_argument("--repeats", type=count, default=0, help="fresh re-judgings of the run's answers per model "
                    "judge, for the flip rate (0: not measured)")
    va.add_argument("--repeat-cache", type=Path, default=None, help="folder of the repeats' own response caches "
                    "(default: <MNEMETRIC_CACHE_DIR>/judge-audit)")
    va.add_argument("--out", type=Path, default=Path("metrics/detail/judge_audit.json"), help="the audit file to write")

    def run(a: argparse.Namespace) -> int:
        return _bridge(a) if a.action == "bridge" else _validity(a)
    return run


def _bridge(a: argparse.Namespace) -> int:
    from contextlib import closing

    from mnemetric.io import write_json_atomic, write_jsonl_atomic
    from mnemetric.longmemeval.judge_audit.bridge import DEFAULT_MIN_KAPPA
    from mnemetric.longmemeval.judge_audit.run import run_bridge
    from mnemetric.longmemeval.reference import reference_by_id

    (judge,) = build_judges(a, [a.judge], [a.model] if a.model else [])
    min_kappa = DEFAULT_MIN_KAPPA if a.min_kappa is None else a.min_kappa
    with closing(command_executor(a)) as executor:
        record, lines = run_bridge(judge, a.judged, reference_by_id(a.ref), executor, min_kappa=min_kappa)
    write_json_atomic(a.out, record)
    if a.judged_out:
        write_jsonl_atomic(a.judged_out, lines)
    o = record["overall"]
    kappa = "undefined" if o["kappa"] is None else f"{o['kappa']:.4f}"
    ci = o["kappa_ci95"]
    print(f"{'type':28s} {'n':>4s} {'agree':>6s} {'kappa':>7s}")
    for t, b in record["per_type"].items():
        k = "-" if b["kappa"] is None else f"{b['kappa']:.3f}"
        print(f"{t:28s} {b['n']:4d} {b['agreement']:6.3f} {k:>7s}")
    print(f"overall: n {o['n']}, agreement {o['agreement'] if o['agreement'] is None else round(o['agreement'], 4)}, "
          f"kappa {kappa}" + (f" [{ci['low']:.4f}, {ci['high']:.4f}]" if ci else " (no interval)")
          + f"; flips yes->no {len(record['flips']['yes_to_no'])}, no->yes {len(record['flips']['no_to_yes'])}")
    if record["failures"]:
        print(f"{len(record['failures'])} question(s) got no verdict from the candidate", file=sys.stderr)
    verdict = "BRIDGED" if record["bridged"] else "NOT bridged"
    print(f"{judge.name}: {verdict} (min kappa {min_kappa}; never official) → {a.out}")
    return 0


def _validity(a: argparse.Namespace) -> int:
    from contextlib import closing

    from mnemetric.execute import build_executor
    from mnemetric.longmemeval.judge_audit.files import write_judge_audit
    from mnemetric.longmemeval.judge_audit.run import default_repeat_folder, repeat_executors, run_validity
    from mnemetric.longmemeval.reference import reference_by_id

    judges = build_judges(a, a.judges or ["lexical"], a.models or [])
    section, llm, where = executor_parts(a)
    with closing(build_executor(section, llm, where=where)) as executor:
        repeat_executor = repeat_executors(section, llm, a.repeat_cache or default_repeat_folder(), executor)
        record = run_validity(judges, a.judged, reference_by_id(a.ref), executor, repeats=a.repeats,
                              repeat_executor=repeat_executor, reference_file=a.ref)
    write_judge_audit(a.out, record)
    for row in record["judges"]:
        c, adv, rep = row["controls"], row["adversarial"], row["repeat"]
        shown = ", ".join(f"{r} {_pct(b['acceptance'])}" for r, b in adv.items())
        kappa = row["agreement_with_run"]["overall"]["kappa"]
        print(f"{row['name']}: positive {_pct(c['positive']['acceptance'])}, negative "
              f"{_pct(c['negative']['acceptance'])}; adversarial accepted: {shown}; kappa with the run "
              f"{'undefined' if kappa is None else f'{kappa:.3f}'}; flip rate "
              f"{'not measured' if rep is None else _pct(rep['flip_rate'])}")
    print(f"judge-audit: {len(record['judges'])} judge(s), {len(record['disputed'])} disputed question(s) → {a.out}")
    return 0


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
