"""Commands on LongMemEval-V2 data roots: `mnemetric v2 validate` (alias v2-validate)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mnemetric.errors import InputError
from mnemetric.cli.registry import Handler
from mnemetric.cli.v2 import _haystack, both


@both("validate", "check a LongMemEval-V2 data root and list every problem",
         "Validate a LongMemEval-V2 data root (questions.jsonl, trajectories.jsonl, haystacks/, screenshots/) "
         "for one haystack: every check upstream's data/validate_data.py makes and those its harness makes when a "
         "run starts, plus strict JSON (no NaN/Infinity, BOM, non-UTF-8 bytes, duplicate keys, empty files), "
         "duplicate question ids, eval_function specs, the llm_abstention_checker/-abs rule and paths that "
         "leave the data root. Prints one line per problem (file: record: field: problem) and exits 1 if any. "
         "With --no-images neither question images nor state screenshots need to exist (their paths are still "
         "checked); upstream's --no-check-screenshots still requires every question image.")
def _v2_validate(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("data_root", type=Path, help="a LongMemEval-V2 data root (e.g. data/sample-v2)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--tier", choices=("small", "medium"), default=None,
                       help="validate haystacks/lme_v2_<tier>.json (default: small)")
    which.add_argument("--haystack", default=None,
                       help="small, medium (as --tier) or a haystack file (a relative path is tried as given, then "
                            "under DATA_ROOT), as `mnemetric v2 run --haystack` takes it")
    p.add_argument("--no-images", action="store_true", help="do not require question images and screenshots to exist")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval_v2.validate import validate_root
        if not a.data_root.is_dir():
            raise InputError(str(a.data_root), "<root>", "<root>", "is not a folder",
                             fix="pass the folder that holds questions.jsonl and trajectories.jsonl")
        haystack = a.tier or "small" if a.haystack is None else _haystack(a.data_root, a.haystack)
        problems = validate_root(a.data_root, haystack, check_images=not a.no_images)
        for prob in problems:
            print(f"{prob.file}: {prob.record}: {prob.field}: {prob.message}")
        images = "without images" if a.no_images else "with images"
        print(f"{a.data_root}: {len(problems)} problem(s) ({haystack}, {images})", file=sys.stderr)
        return 1 if problems else 0
    return run
