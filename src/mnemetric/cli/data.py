"""Commands on dataset files: validate, adapt, fetch, compose."""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Iterator
from pathlib import Path

from mnemetric.errors import ConfigError
from mnemetric.cli.registry import Handler, command, conf_options, load_option, option_path


# ------------------------------------------------------------------ data


@command("validate", "check a LongMemEval file and list every problem",
         "Validate a LongMemEval JSON file (one JSON list of instances), streaming it: strict JSON "
         "(UTF-8 without BOM; no NaN/Infinity; nothing after the closing ']'; not empty), required fields "
         "and types, parallel haystack lists of equal length, known question types, real dates in the format "
         "'%Y/%m/%d (%a) %H:%M' with the right weekday, unique question_ids and session ids, and the upstream "
         "evidence rules (answer_session_ids name sessions whose id contains 'answer'; has_answer on every user "
         "turn of those and true nowhere else). Prints one line per problem (file: the question, its index in the "
         "list and the byte offset of its first byte, e.g. \"question 'q_37' (index 36, byte 1048576)\", or "
         "'index N (byte B)' without an id, or 'line N' for a file-level flaw: field: problem) and 'warning:' lines, naming the question the same way, for odd but usable data that real upstream "
         "files have (a question_date before the last session; a filler session listed twice with identical content). "
         "Exits 1 if there is any problem (warnings do not count), 2 if the file cannot be opened.")
def _validate(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("file", type=Path, help="a LongMemEval JSON file (e.g. longmemeval_oracle.json)")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval.instance import scan_file
        from mnemetric.longmemeval.instance_checks import DataWarning
        tally = {"problems": 0, "warnings": 0}

        def show(finding) -> None:
            tally["warnings" if isinstance(finding, DataWarning) else "problems"] += 1
            print(finding)

        with few_collections():
            n, fatal = scan_file(a.file, show)
        if fatal is not None:
            tally["problems"] += 1
            print(fatal)
        print(f"{a.file}: {n} instances, {tally['problems']} problem(s), {tally['warnings']} warning(s)",
              file=sys.stderr)
        return 1 if tally["problems"] else 0
    return run


@command("adapt", "turn a LongMemEval file into adapted records (memory view | eval view)",
         "Adapt every instance with an adapter schema and write JSONL: 'session-v3' "
         "(mnemetric.longmemeval-session/v3, dated sessions and question) or 'legacy-v2' "
         "(mnemetric.longmemeval-session/v2, the undated replay). The memory half carries no labels. "
         "A file with problems writes nothing and lists them all (up to 50, then a count).")
def _adapt(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("file", type=Path, help="a LongMemEval JSON file")
    add_adapter_options(p)
    p.add_argument("--out", type=Path, required=True, help="output JSONL file")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval.adapt import WarningTally, adapt_file
        warnings = WarningTally()
        adapter = load_adapter(a.adapter, a.conf)
        with few_collections():
            n = adapt_file(adapter, a.file, a.out, on_warning=warnings)
        print(f"{n} questions → {a.out}")
        if warnings.count:
            print(warnings.summary(a.file), file=sys.stderr)
        return 0
    return run


@contextlib.contextmanager
def few_collections(every: int = 50_000) -> Iterator[None]:
    """Run the cyclic garbage collector's youngest generation every ``every`` allocations instead of 700
    (the threshold is restored after). Reading an M-shaped file builds some 5,000 objects per instance,
    none in a cycle (reference counting frees each instance), so at 700 the collector scans about seven
    times per instance and finds nothing: about 15% of `mnemetric validate`'s time (tests/bench, stream)."""
    old = gc.get_threshold()
    gc.set_threshold(every, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def add_adapter_options(p: argparse.ArgumentParser, *, conf: bool = True) -> None:
    """--adapter (an option of <conf>/adapter/ or the package's, or a YAML path) and, unless the command
    has its own, --conf."""
    p.add_argument("--adapter", default="session-v3", metavar="NAME",
                   help="adapter option in <conf>/adapter/ (shipped: " + ", ".join(conf_options("adapter"))
                        + "; session-v3: dated sessions and question, legacy-v2: the undated replay) or a path "
                        "to a YAML file whose _target_ names the adapter class")
    if conf:
        p.add_argument("--conf", type=Path, default=Path("conf"),
                       help="a project's conf folder, adding its own options to those shipped with Mnemetric; "
                            "used when it exists")


def load_adapter(name: str, conf: Path = Path("conf")):
    """Build the adapter of conf option ``adapter=<name>`` (or a YAML path) by its _target_, as stage adapt does."""
    from mnemetric.config import build
    from mnemetric.errors import ConfigError
    from mnemetric.longmemeval.adapted import SessionAdapter
    cfg = load_option("adapter", name, conf)
    where = str(option_path("adapter", name, conf) or f"adapter={name}")
    adapter = build(cfg, where)
    if not isinstance(adapter, SessionAdapter):
        raise ConfigError(f"{where}: {cfg.get('_target_')} is not a LongMemEval adapter (SessionAdapter)")
    return adapter


@command("fetch", "download a pinned LongMemEval variant and verify its sha256",
         "Download a variant file named in conf/variant/<name>.yaml from "
         "{HF_ENDPOINT}/datasets/{repo}/resolve/{revision}/{file} (HF_ENDPOINT defaults to "
         "https://huggingface.co; HF_TOKEN is sent when set), resuming a partial download, and verify its "
         "sha256 (and size when pinned). The verified file stays in the --downloads folder, where the pipeline's prepare stage finds it (also offline).")
def _fetch(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("variant", help="variant name (oracle, s, m) or a path to a variant YAML")
    p.add_argument("--conf", type=Path, default=Path("conf"),
                   help="a project's conf folder adding its own variants to Mnemetric's (used when it exists)")
    p.add_argument("--downloads", type=Path, default=Path("data/downloads"), help="download folder (default: %(default)s)")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.custody.dataset import Variant
        from mnemetric.download import fetch
        variant = Variant.from_params(load_option("variant", a.variant, a.conf))
        if variant.source != "huggingface":
            raise ConfigError("variant", f"{variant.name} is bundled ({variant.path}); nothing to download",
                              fix="fetch downloads the pinned Hugging Face variants (oracle, s, m)")
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
        from mnemetric.config import compose_to
        compose_to(a.out, a.conf, a.overrides)
        print(f"composed {a.conf} → {a.out}")
        return 0
    return run
