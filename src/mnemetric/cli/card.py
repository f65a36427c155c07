"""`mnemetric card`: print the result card (Markdown) of the run in this repository.

The card is the headline family's (params.yaml's ``benchmark``, or ``--benchmark NAME``): its run
manifest, the metrics files its card names, its custody bullets and the frame of
:mod:`mnemetric.custody.card`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mnemetric.cli.registry import Handler, command

OUTPUTS = "data/custody/outputs.sha256.json"


@command("card", "print the run's result card (Markdown, ready to paste into an issue or an appendix)",
         "Reads the headline family's run manifest (params.yaml benchmark; LongMemEval: metrics/run.json, "
         "LongMemEval-V2: metrics/run-v2.json), the metrics files its card names (LongMemEval: "
         "metrics/detail/qa.json, else metrics/qa.json; metrics/detail/retrieval.json, else metrics/retrieval.json; "
         "LongMemEval-V2: metrics/v2.json) and data/custody/outputs.sha256.json, and prints the headline numbers "
         "with intervals, the family's custody facts (LongMemEval: the dataset and its sha256, suite, memory "
         "system and fingerprint, reader, judge snapshot and prompt-set sha256, the judged file's sha256; "
         "LongMemEval-V2: its data custody, memory, reader, checker and token counter) and official_equivalence "
         "with its reasons.")
def _card(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--benchmark", default=None, metavar="NAME",
                   help="the family whose card to print (default: params.yaml's benchmark, else conf's default)")
    p.add_argument("--run", type=Path, default=None, help="the run manifest (default: the family's)")
    p.add_argument("--metrics", action="append", default=[], metavar="ROLE=PATH",
                   help="a metrics file for one of the card's roles (repeatable; LongMemEval: qa, retrieval)")
    p.add_argument("--qa", type=Path, default=None, help="the same as --metrics qa=PATH")
    p.add_argument("--retrieval", type=Path, default=None, help="the same as --metrics retrieval=PATH")
    p.add_argument("--outputs", type=Path, default=Path(OUTPUTS), help="the sha256 custody manifest (optional)")
    p.add_argument("--judged", default=None, help="LongMemEval: the judged file's repo path (default: params.yaml "
                   "paths.judged)")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.custody.card import card_from_files
        params = dict(_params() or {})
        family = _family(a.benchmark, params or None)
        if a.judged:
            params["paths"] = {**(params.get("paths") or {}), "judged": a.judged}
        text = card_from_files(family, params, run=a.run or family.run_manifest or "", outputs=a.outputs,
                               overrides=_overrides(a))
        print(text, end="")
        return 0
    return run


def _overrides(a: argparse.Namespace) -> dict[str, str]:
    from mnemetric.errors import ConfigError
    out = {}
    for item in a.metrics:
        role, sep, path = item.partition("=")
        if not (sep and role and path):
            raise ConfigError("--metrics", f"{item!r} is not ROLE=PATH", fix="for example --metrics qa=metrics/qa.json")
        out[role] = path
    out |= {role: str(path) for role, path in (("qa", a.qa), ("retrieval", a.retrieval)) if path is not None}
    return out


def _params() -> dict | None:
    from mnemetric.params import PARAMS_FILE, load_params
    return load_params() if PARAMS_FILE.is_file() else None


def _family(name: str | None, params: dict | None):
    from mnemetric.family import family_named, headline_family
    return family_named(name) if name else headline_family(params)

