"""A LongMemEval-V2 run from its settings (the ``v2`` conf option): the library side of stage ``v2``.

Builds the memory factory, reader, checker and token counter the settings name, runs
:func:`mnemetric.longmemeval_v2.run.run_v2` and returns its result. The offline reader and checker
need no model and no network (the bundled sample's default); ``reader: openai`` / ``checker: llm``
go through the one LLM client (cache, budget, retries) with the run's ``llm:`` settings and read the
pinned upstream texts at run time (MNEMETRIC_LONGMEMEVAL_V2_DIR, else the cache, else a download).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError
from mnemetric.longmemeval_v2.run import V2Run, run_v2

READERS = ("offline", "openai")
CHECKERS = ("offline", "llm")


def _client(llm: Mapping[str, Any], base_url: str | None, role: str):
    from mnemetric.llm.settings import client_from_params

    return client_from_params(llm, base_url, role=role)


def _texts(loader, required: bool):
    from mnemetric.errors import MnemetricError
    from mnemetric.llm.cache import default_cache_dir

    try:
        return loader(os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR"), default_cache_dir(), download=required)
    except MnemetricError:
        if required:
            raise
        return None


def build_reader(s: Mapping[str, Any], llm: Mapping[str, Any]):
    """(reader, reader texts or None) for ``s["reader"]``."""
    from mnemetric.longmemeval_v2.reader import OfflineReader, OpenAIReader
    from mnemetric.longmemeval_v2.upstream_text import load_reader_texts

    if s["reader"] == "offline":
        return OfflineReader(), _texts(load_reader_texts, False)
    if s["reader"] != "openai":
        raise ConfigError("v2.reader", f"{s['reader']!r} is not one of {', '.join(READERS)}")
    texts = _texts(load_reader_texts, True)
    return OpenAIReader(_client(llm, s.get("reader_base_url"), "reader"), texts, model=s["reader_model"]), texts


def build_checker(s: Mapping[str, Any], llm: Mapping[str, Any]):
    from mnemetric.longmemeval_v2.llm_checkers import LLMCheckers, OfflineChecker
    from mnemetric.longmemeval_v2.upstream_text import load_checker_texts

    if s["checker"] == "offline":
        return OfflineChecker()
    if s["checker"] != "llm":
        raise ConfigError("v2.checker", f"{s['checker']!r} is not one of {', '.join(CHECKERS)}")
    return LLMCheckers(_client(llm, s.get("judge_base_url"), "judge"), _texts(load_checker_texts, True),
                       model=s["judge_model"])


def run_from_settings(s: Mapping[str, Any], llm: Mapping[str, Any]) -> V2Run:
    """One V2 evaluation as the ``v2`` settings say (see conf/v2/sample.yaml for the keys)."""
    from mnemetric.longmemeval_v2.baselines import make_memory
    from mnemetric.longmemeval_v2.tokens import counter_for

    root = Path(s["data_root"])
    counter = counter_for(s["token_counter"], s.get("processor_path"))
    reader, texts = build_reader(s, llm)
    checker = build_checker(s, llm)
    options = {"top_k": int(s.get("top_k", 10))}
    return run_v2(root, s["haystack"], tuple(s["domains"]),
                  factory=lambda: make_memory(s["memory"], root, options), memory_name=s["memory"],
                  reader=reader, checker=checker, counter=counter, max_tokens=int(s["max_tokens"]),
                  texts=texts, check_images=bool(s.get("check_images", True)))


MEASURED = "measured on this machine: not a DVC-tracked number (see the run folder and the run log)"


def tracked_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """metrics/v2.json's content: the run summary without what a clock measured.

    Query latency (and the LAFS point it places) is a measurement of this machine, not a pure
    function of the inputs; DVC-tracked files must be (a fresh clone reproduces them byte for byte).
    So latency and LAFS stay in the untracked run folder and the terminal, and the tracked file says
    so; every accuracy, count, token figure and the official verdict stay.
    """
    out = {k: v for k, v in summary.items() if k != "lafs"}
    for name in ("domains", "combined"):
        blocks = out.get(name)
        if isinstance(blocks, dict):
            out[name] = _strip(blocks) if name == "combined" else {d: _strip(b) for d, b in blocks.items()}
    out["latency"] = MEASURED
    out["lafs"] = {"tier": (summary.get("lafs") or {}).get("tier"), "note": MEASURED}
    return out


CATEGORY_SECTIONS = ("non_abstention_by_category", "abstention_by_category", "combined_abstention_by_category",
                     "abstention_overall")


def by_category(aggregated: Mapping[str, Any]) -> dict[str, Any]:
    """upstream's per-category breakdowns (fractions, counts) of an aggregated_metrics dict."""
    return {k: aggregated[k] for k in CATEGORY_SECTIONS if k in aggregated}


def _strip(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if not k.startswith("memory_query")}


def v2_manifest(settings: Mapping[str, Any], summary: Mapping[str, Any], path: str) -> dict[str, Any]:
    """metrics/run-v2.json: where the V2 numbers came from, in the run-manifest keys the task inventory
    reads (mnemetric.custody.inventory). Deterministic (no clock). The bundled sample is not an official
    file, so ``variant.sha256_verified`` is true only for a data root verified against the dataset pins
    (not wired yet: always false here, and the gate says so)."""
    both = summary.get("combined") or next(iter(summary["domains"].values()))
    return {
        "path": path, "benchmark": "LongMemEval-V2",
        "variant": {"name": settings["name"], "data_root": settings["data_root"], "haystack": settings["haystack"],
                    "sha256_verified": False},
        "suite": {"name": "full"},
        "memory": {"name": settings["memory"]},
        "reader": {"name": settings["reader"], "model": settings.get("reader_model") if settings["reader"] != "offline"
                   else None},
        "judge": {"name": settings["checker"], "kind": "llm" if settings["checker"] == "llm" else "offline",
                  "prompt_set_sha256": None},
        "counts": {"questions": both["questions"], "judged": both["scored"], "failed": both["failed"]},
        "official_equivalence": {"value": bool(summary["official_equivalence"]["official"]),
                                 "reasons": list(summary["official_equivalence"]["reasons"])},
    }
