"""`mnemetric sample`: write (or check) Mnemetric's LongMemEval-format sample and synthetic sets."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from mnemetric.longmemeval.sample import DEFAULT_OUT, DEFAULT_SEED
from mnemetric.cli.registry import Handler, command

DEFAULT_SESSIONS = 48


@command("sample", "write Mnemetric's bundled LongMemEval-format sample (or a large synthetic set); --check verifies it",
         "Generate data in the exact LongMemEval (V1) instance schema from Mnemetric's own phrase banks "
         "(mnemetric/sample/banks/*.json: no upstream text, no network, no model), deterministically from "
         "--seed. Without --synthetic: the bundled 43-question sample; with the default seed its bytes equal "
         "the committed data/sample/longmemeval_sample.json. With --synthetic N: N large questions of "
         f"--sessions S sessions each (default {DEFAULT_SESSIONS}; 500 x 48 is S-scale, for benchmarks), "
         "streamed to the file. --check writes nothing: it regenerates in memory and compares the sha256 "
         "with the file at --out, exiting 1 on drift.")
def _sample(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), help="output JSON file (with --check: the file to compare)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed")
    p.add_argument("--synthetic", type=int, metavar="N", help="write N large synthetic questions instead of the sample")
    p.add_argument("--sessions", type=int, metavar="S",
                   help=f"sessions per synthetic haystack (only with --synthetic; default {DEFAULT_SESSIONS})")
    p.add_argument("--check", action="store_true",
                   help="regenerate in memory and compare its sha256 with --out's; exit 1 on drift; write nothing")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval.sample import instances_sha256, write_instances
        instances = _instances(a)
        if a.check:
            return _check(a, instances_sha256(instances))
        n, sha = write_instances(a.out, instances)
        print(f"wrote {n} instances to {a.out} (sha256 {sha})")
        return 0
    return run


def _instances(a: argparse.Namespace):
    from mnemetric.errors import ConfigError
    from mnemetric.longmemeval.sample import generate_sample, generate_synthetic
    if a.synthetic is None:
        if a.sessions is not None:
            raise ConfigError("--sessions", "applies only to synthetic sets", fix="add --synthetic N, or drop --sessions")
        return generate_sample(a.seed)
    return generate_synthetic(a.synthetic, DEFAULT_SESSIONS if a.sessions is None else a.sessions, a.seed)


def _check(a: argparse.Namespace, fresh: tuple[int, str]) -> int:
    from mnemetric.io import require_file, sha256_file
    n, sha = fresh
    rebuild = _rebuild_command(a)
    on_disk = sha256_file(require_file(a.out, fix=f"write it with `{rebuild}`"))
    if on_disk == sha:
        print(f"{a.out}: up to date ({n} instances, sha256 {sha})")
        return 0
    pins = "" if a.synthetic is not None else (" and update the pinned sha256 and size in conf/variant/sample.yaml "
                                               "and data/sample/README.md; otherwise restore the file from git")
    print(f"{a.out}: drift: the file's sha256 is {on_disk}, a fresh generation gives {sha} ({n} instances)\n"
          f"  fix: if the generator or its banks changed on purpose, run `{rebuild}`{pins}", file=sys.stderr)
    return 1


def _rebuild_command(a: argparse.Namespace) -> str:
    words = ["mnemetric", "sample", "--out", str(a.out)]
    if a.seed != DEFAULT_SEED:
        words += ["--seed", str(a.seed)]
    if a.synthetic is not None:
        words += ["--synthetic", str(a.synthetic), "--sessions", str(DEFAULT_SESSIONS if a.sessions is None else a.sessions)]
    return shlex.join(words)
