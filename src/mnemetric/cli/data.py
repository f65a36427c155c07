"""Commands on dataset files: validate, adapt, fetch, compose."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import MnemetricError
from .registry import Handler, command, load_option


# ------------------------------------------------------------------ data


@command("validate", "check a LongMemEval file and list every problem",
         "Validate every instance of a LongMemEval JSON file (a JSON list of instances): required fields "
         "and types, parallel haystack lists of equal length, known question types, the date format "
         "'%Y/%m/%d (%a) %H:%M', answer_session_ids present in the haystack, duplicate question_ids. "
         "Prints one line per problem (file: question_id or index: field: problem) and exits 1 if any.")
def _validate(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("file", type=Path, help="a LongMemEval JSON file (e.g. longmemeval_oracle.json)")

    def run(a: argparse.Namespace) -> int:
        from ..data.longmemeval import validate_file
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
        from ..adapters import SessionAdapter
        from ..stages.adapt import adapt_file
        n = adapt_file(SessionAdapter(a.adapter, ADAPTERS[a.adapter]), a.file, a.out)
        print(f"{n} questions → {a.out}")
        return 0
    return run


ADAPTERS = {"session-v3": "mnemetric.longmemeval-session/v3", "legacy-v2": "mnemetric.longmemeval-session/v2"}


@command("fetch", "download a pinned LongMemEval variant and verify its sha256",
         "Download a variant file named in conf/variant/<name>.yaml from "
         "{HF_ENDPOINT}/datasets/{repo}/resolve/{revision}/{file} (HF_ENDPOINT defaults to "
         "https://huggingface.co; HF_TOKEN is sent when set), resuming a partial download, and verify its "
         "sha256 (and size when pinned). The verified file stays in the --downloads folder, where the pipeline's prepare stage finds it (also offline).")
def _fetch(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("variant", help="variant name (oracle, s, m) or a path to a variant YAML")
    p.add_argument("--conf", type=Path, default=Path("conf"), help="conf folder (default: %(default)s)")
    p.add_argument("--downloads", type=Path, default=Path("data/downloads"), help="download folder (default: %(default)s)")

    def run(a: argparse.Namespace) -> int:
        from ..data.custody import Variant
        from ..data.download import fetch
        variant = Variant.from_params(load_option("variant", a.variant, a.conf))
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
        from ..config import compose_to
        compose_to(a.out, a.conf, a.overrides)
        print(f"composed {a.conf} → {a.out}")
        return 0
    return run
