"""The `crosscheck` command: upstream's own scoring scripts, unchanged, against our numbers.

The LongMemEval family's cross-check: scripts, pins, lock and our side of each comparison come from
:data:`mnemetric.longmemeval.family.CROSSCHECK`, passed to :func:`mnemetric.custody.crosscheck.crosscheck`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mnemetric.cli.registry import Handler, command
from mnemetric.cli.types import positive_number


def _override(text: str) -> tuple[str, str]:
    rel, sep, sha = text.partition("=")
    if not sep or len(sha) != 64:
        raise argparse.ArgumentTypeError(f"expected PATH=SHA256 (64 hex digits), got {text!r}")
    return rel, sha.lower()


@command("crosscheck", "run upstream's print_*_metrics.py unchanged on our files and compare, number by number",
         "Verify a local checkout of xiaowu0162/LongMemEval at 9e0b455f (sha256 of every scoring file), run "
         "src/evaluation/print_retrieval_metrics.py on --retrieval-log and src/evaluation/print_qa_metrics.py "
         "on --judged/--reference as separate processes in an isolated environment (a venv built once from "
         "crosscheck/upstream-v1.lock under the Mnemetric cache, or --python), parse what they print, and "
         "compare every number with Mnemetric's own (rounded to 4 decimals as upstream rounds). Writes the "
         "evidence JSON (schema mnemetric.crosscheck/v1, no clock time) atomically to --out. Exit 0 when all "
         "agree, 1 when any differs, 2 for bad input (missing files, wrong hashes). src/evaluation/evaluate_qa.py "
         "(the judge) runs only with --hypotheses and an endpoint in OPENAI_BASE_URL + OPENAI_API_KEY.")
def _crosscheck(p: argparse.ArgumentParser) -> Handler:
    from mnemetric.longmemeval.family import CROSSCHECK

    p.add_argument("--upstream-dir", type=Path, required=True, default=argparse.SUPPRESS, metavar="DIR",
                   help="a LongMemEval checkout at the pinned revision")
    p.add_argument("--retrieval-log", type=Path, metavar="LOG", help="an upstream-format retrieval log")
    p.add_argument("--granularity", default="auto", choices=("auto", "session", "turn"), help="of the retrieval log")
    p.add_argument("--judged", type=Path, metavar="FILE", help="a judged file (JSONL with autoeval_label)")
    p.add_argument("--reference", type=Path, metavar="REF", help="the LongMemEval reference file (a JSON list)")
    p.add_argument("--hypotheses", type=Path, metavar="HYP", help="the hypotheses behind --judged: with an "
                   "endpoint (OPENAI_BASE_URL + OPENAI_API_KEY) upstream evaluate_qa.py judges them and its labels "
                   "are compared with --judged's, question by question")
    p.add_argument("--judge-timeout", type=positive_number, default=3600.0, help="seconds evaluate_qa.py may run")
    p.add_argument("--python", metavar="PY", help="use this interpreter instead of the locked venv")
    p.add_argument("--env-dir", type=Path, metavar="D", help="where to build/reuse the venv "
                   "(default: <cache>/crosscheck-env-<sha256 of the lock>)")
    p.add_argument("--lock", type=Path, default=CROSSCHECK.lock, help="the lock file of the environment")
    p.add_argument("--expected-sha256", type=_override, action="append", default=[], metavar="PATH=SHA256",
                   help="expect another sha256 for an upstream file (the evidence then says pinned: false)")
    p.add_argument("--note", action="append", default=[], metavar="TEXT",
                   help="a sentence recorded in the evidence (e.g. how an input was prepared); repeatable")
    p.add_argument("--out", type=Path, required=True, default=argparse.SUPPRESS, metavar="EVIDENCE.json",
                   help="evidence file to write")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.custody.crosscheck import crosscheck, write_evidence

        evidence = crosscheck(a.upstream_dir, CROSSCHECK, retrieval_log=a.retrieval_log, granularity=a.granularity,
                              judged=a.judged, reference=a.reference, hypotheses=a.hypotheses,
                              python=a.python, judge_timeout=a.judge_timeout, env_dir=a.env_dir,
                              lock=a.lock, expected_sha256=dict(a.expected_sha256),
                              notes=a.note)
        write_evidence(a.out, evidence)
        for c in evidence["checks"]:
            mark = "agree" if c["agree"] else "DISAGREE"
            print(f"{mark:8}  {c['script']:28} {c['metric']:34} ours={c['ours']}  upstream={c['upstream']}")
        for skipped in evidence["not_run"]:
            print(f"not run   {skipped['script']}: {skipped['reason']}")
        bad = [c["metric"] for c in evidence["checks"] if not c["agree"]]
        env = evidence["environment"]
        print(f"{len(evidence['checks'])} numbers compared, {len(bad)} differ"
              + (f" ({', '.join(bad)})" if bad else "")
              + f"; python {env['python']}, environment {'matches' if env['matches_lock'] else 'does NOT match'} "
              f"the lock; upstream files {'pinned' if evidence['upstream']['pinned'] else 'NOT the pinned ones'}"
              f" → {a.out}")
        return 0 if evidence["agree"] else 1

    return run
