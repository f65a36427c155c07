"""Upstream's run folder, written beside Mnemetric's: what the leaderboard's step-1 builder reads of one run.

Facts from github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd (read, not copied):
evaluation/harness.py records ``run_args.json`` = every harness argument (:data:`HARNESS_ARG_KEYS`, in
argparse order) plus ``started_at_utc``, with no method and no tier; evaluation/run_eval.py writes
``runtime_inputs/`` = ``questions.json`` (the domain's questions.jsonl rows in file order, ``image`` folded into
``question = {text, image: absolute path}``), ``haystack.json`` (the tier's lists of those questions) and
``memory_config.json`` (``{memory_type, memory_params}``, build_memory_config's: for an upstream baseline the
memory's type and its constructor params, see :func:`memory_config`); leaderboard/submission_utils.py validate_run reads
aggregated_metrics.json, per_question.jsonl, run_args.json and runtime_inputs/{questions,haystack}.json.
Beside them, ours: ``runtime_inputs/token_counter.json`` (:data:`COUNTER_FILE`), the counter that cut the memory
contexts, which a package cannot otherwise show. Every JSON file as upstream writes it: indent 2, ASCII escapes,
trailing newline.

:func:`write_upstream_run` fills ``run_args.json`` honestly from the run's settings and what its requests
were sent with (the rows' ``reader_params_sent``; the checker's facts): a value Mnemetric does not know or
does not have is null, never upstream's default (an offline reader records ``model: null``). Paths are
absolute, as upstream's. ``started_at_utc`` is null unless the caller knows when the run started (the run
folder is untracked; no tracked file holds it). :func:`read_started_at` reads it back (what `v2 package` needs
of run_args.json for its ``generated_at_utc``).

:func:`export_run` copies a domain's run folder to ``<dest>/<method>_<domain>_<tier>/``, the name upstream's
wrapper scripts give (so step 1 infers the method without ``--method``).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError
from mnemetric.io import atomic_open, read_jsonl
from mnemetric.longmemeval_v2.facts import checker_calls_model
from mnemetric.longmemeval_v2.per_question import PerQuestionRow
from mnemetric.longmemeval_v2.validate import QUESTIONS_FILE, TRAJECTORIES_FILE, haystack_path
from mnemetric.records import Fields, read_json_file

HARNESS_ARG_KEYS = (
    "domain", "questions_path", "haystack_path", "trajectories_path", "memory_config_path", "output_dir",
    "save_memory", "skip_evaluation", "load_memory_dir", "model", "base_url", "api_key_env", "api_key_file",
    "max_completion_tokens", "memory_context_max_tokens", "prompt_build_max_workers", "shuffle_questions_seed",
    "reader_max_concurrent_requests", "timeout_seconds", "reasoning_effort", "temperature", "top_p",
    "presence_penalty", "top_k", "repetition_penalty", "reader_enable_thinking", "evaluator_model",
    "evaluator_base_url", "evaluator_api_key_env", "evaluator_api_key_file", "evaluator_reasoning_effort",
    "evaluator_max_completion_tokens", "evaluator_timeout_seconds", "started_at_utc",
)
"""run_args.json's keys, in upstream's order (harness.py parse_args + started_at_utc)."""
RUN_FILES = ("aggregated_metrics.json", "per_question.jsonl", "run_args.json")
RUNTIME_DIR = "runtime_inputs"
RUNTIME_FILES = ("questions.json", "haystack.json", "memory_config.json")
COUNTER_FILE = "token_counter.json"
"""runtime_inputs/token_counter.json (ours, not upstream's: its harness hard-codes the Qwen/Qwen3.5-9B processor):
``{name, official, note}`` of the counter that cut the memory contexts to the budget. Upstream's step 1 copies
runtime_inputs/ whole, so it travels into any package; `v2 package --check` refuses a run without it."""
RUN_ARGS_FIX = "write the run with `mnemetric v2 run` / stage v2_metrics of this version"
API_KEY_ENV = "OPENAI_API_KEY"
"""Where Mnemetric's reader and checker read their key (the environment only), as upstream's default."""


def upstream_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=True) + "\n"


def write_upstream_file(path: Path, obj: Any) -> None:
    with atomic_open(path) as fh:
        fh.write(upstream_json(obj))


def run_name(method: str, domain: str, tier: str) -> str:
    """``<method>_<domain>_<tier>``: the run folder name upstream's step 1 reads the method from."""
    return f"{method}_{domain}_{tier}"


def runtime_questions(data_root: Path, question_ids: Sequence[str], domain: str) -> list[dict[str, Any]]:
    """The questions.jsonl rows of ``question_ids`` (file order), image folded into ``question`` (module docstring)."""
    wanted, out = set(question_ids), []
    path = data_root / QUESTIONS_FILE
    for line, raw in read_jsonl(path):
        if not isinstance(raw, dict) or raw.get("id") not in wanted:
            continue
        if raw.get("domain") != domain:
            raise InputError(str(path), f"line {line} ({raw.get('id')})", "domain",
                             f"{raw.get('domain')!r}, but the run's {domain} rows hold this question")
        item = dict(raw)
        image = item.pop("image", None)
        if image is not None:
            item["question"] = {"text": item["question"], "image": str((data_root / image).resolve())}
        out.append(item)
    found = {q["id"] for q in out}
    missing = [q for q in question_ids if q not in found]
    if missing:
        raise InputError(str(path), missing[0], "id", f"{len(missing)} question(s) of the run are not in the data root")
    return out


def runtime_haystack(path: Path, question_ids: Sequence[str]) -> dict[str, list[str]]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    missing = [q for q in question_ids if q not in raw]
    if missing:
        raise InputError(str(path), missing[0], "<key>", "no haystack entry for this question of the run")
    return {q: list(raw[q]) for q in question_ids}


def memory_config(section: Mapping[str, Any]) -> dict[str, Any]:
    """runtime_inputs/memory_config.json, ``{memory_type, memory_params}`` (the shape upstream's
    ``load_memory_config`` reads). An upstream baseline (conf/v2/memory/upstream-*.yaml): exactly what upstream's
    run_eval.py writes for that method, the memory's type (``rag`` for rag_query_to_slice) and the params it is
    built from (:func:`mnemetric.longmemeval_v2.upstream_memory.runtime_memory_config`), never our option's keys.
    Any other memory (ours): ``memory_type`` = the option's ``name``, ``memory_params`` = its own keys (no
    ``_target_``, no ``name``)."""
    from mnemetric.longmemeval_v2.upstream_memory import is_upstream_option, runtime_memory_config

    if is_upstream_option(section):
        return runtime_memory_config(section)
    params = {k: v for k, v in section.items() if not str(k).startswith("_") and k != "name"}
    return {"memory_type": str(section.get("name")), "memory_params": params}


def counter_record(name: Any, official: Any, note: Any = None) -> dict[str, Any]:
    """The token_counter.json record (:data:`COUNTER_FILE`)."""
    return {"name": name, "official": official, "note": note}


def _sent(rows: Sequence[PerQuestionRow], domain: str) -> Mapping[str, Any]:
    sets = {json.dumps(r.extra["reader_params_sent"], sort_keys=True): r.extra["reader_params_sent"]
            for r in rows if isinstance(r.extra.get("reader_params_sent"), Mapping)}
    if len(sets) > 1:
        raise ConfigError(f"{domain} rows", "the reader's requests were sent with more than one parameter set; "
                          "run_args.json records one", fix="rerun the domain with one reader setting")
    return next(iter(sets.values()), {})


def harness_args(domain: str, rows: Sequence[PerQuestionRow], *, run_dir: Path, data_root: Path,
                 settings: Mapping[str, Any], checker: Mapping[str, Any],
                 started_at_utc: str | None = None) -> dict[str, Any]:
    """run_args.json of one domain (module docstring). ``settings``: the ``v2`` section; ``checker``: the
    checker's facts block (:func:`mnemetric.longmemeval_v2.facts.checker_facts`)."""
    sent = _sent(rows, domain)
    extra = sent.get("extra_body") or {}
    thinking = (extra.get("chat_template_kwargs") or {}).get("enable_thinking", True) if sent else None
    reader = settings.get("reader") or {}
    inputs = (run_dir / RUNTIME_DIR).resolve()
    uses_checker = checker_calls_model(checker)
    values = {
        "domain": domain, "questions_path": str(inputs / "questions.json"),
        "haystack_path": str(inputs / "haystack.json"),
        "trajectories_path": str((data_root / TRAJECTORIES_FILE).resolve()),
        "memory_config_path": str(inputs / "memory_config.json"), "output_dir": str(run_dir.resolve()),
        "save_memory": False, "skip_evaluation": False, "load_memory_dir": None,
        "model": reader.get("model") if sent else None, "base_url": reader.get("base_url") if sent else None,
        "api_key_env": API_KEY_ENV, "api_key_file": None,
        "max_completion_tokens": sent.get("max_tokens", sent.get("max_completion_tokens")),
        "memory_context_max_tokens": int(settings["max_tokens"]), "prompt_build_max_workers": 1,
        "shuffle_questions_seed": None, "reader_max_concurrent_requests": None, "timeout_seconds": None,
        "reasoning_effort": sent.get("reasoning_effort"), "temperature": sent.get("temperature"),
        "top_p": sent.get("top_p"), "presence_penalty": sent.get("presence_penalty"), "top_k": extra.get("top_k"),
        "repetition_penalty": extra.get("repetition_penalty"), "reader_enable_thinking": thinking,
        "evaluator_model": checker.get("model") if uses_checker else None, "evaluator_base_url": None,
        "evaluator_api_key_env": API_KEY_ENV, "evaluator_api_key_file": None,
        "evaluator_reasoning_effort": checker.get("reasoning_effort") if uses_checker else None,
        "evaluator_max_completion_tokens": checker.get("max_completion_tokens") if uses_checker else None,
        "evaluator_timeout_seconds": None, "started_at_utc": started_at_utc,
    }
    return {k: values[k] for k in HARNESS_ARG_KEYS}


def read_started_at(path: str | os.PathLike[str]) -> str | None:
    """run_args.json's ``started_at_utc`` (the reader beside :func:`harness_args`, which writes it): a string, or
    null when the run's start is not known. Only that field is read; a file that is not JSON, not an object, or
    lacks the field or holds another type is an InputError naming the file and ``started_at_utc``."""
    raw = read_json_file(path, missing_fix=RUN_ARGS_FIX)
    return Fields.of(raw, file=str(path), record="<file>", fix=RUN_ARGS_FIX).optional_string("started_at_utc")


def write_upstream_run(run_dir: Path, domain: str, rows: Sequence[PerQuestionRow], *, settings: Mapping[str, Any],
                       checker: Mapping[str, Any], counter: Mapping[str, Any] | None = None,
                       started_at_utc: str | None = None) -> list[Path]:
    """run_args.json and runtime_inputs/ of one domain's run folder (beside its per_question.jsonl and
    aggregated_metrics.json); each file atomically. ``counter``: the token counter's record
    (:func:`counter_record`, written as :data:`COUNTER_FILE`; None: none written, and `--check` then refuses the
    run). Returns the paths written."""
    data_root = Path(settings["data_root"])
    ids = [r.question_id for r in sorted(rows, key=lambda r: r.index)]
    inputs = run_dir / RUNTIME_DIR
    files = {inputs / "questions.json": runtime_questions(data_root, ids, domain),
             inputs / "haystack.json": runtime_haystack(haystack_path(data_root, settings["haystack"]), ids),
             inputs / "memory_config.json": memory_config(settings["memory"]),
             run_dir / "run_args.json": harness_args(domain, rows, run_dir=run_dir, data_root=data_root,
                                                     settings=settings, checker=checker,
                                                     started_at_utc=started_at_utc)}
    if counter is not None:
        files[inputs / COUNTER_FILE] = dict(counter)
    for path, obj in files.items():
        write_upstream_file(path, obj)
    return list(files)


def export_run(domain_dir: Path, dest: Path, *, method: str, domain: str, tier: str) -> Path:
    """Copy one domain's run folder (the files upstream reads, and runtime_inputs/) to
    ``dest/<method>_<domain>_<tier>/``; a missing file is named. Returns the new folder."""
    from mnemetric.longmemeval_v2.package_check import require_run_files

    require_run_files(domain_dir)
    target = dest / run_name(method, domain, tier)
    if target.exists():
        raise ConfigError(str(target), "already exists; not replaced", fix="remove it or export elsewhere")
    target.mkdir(parents=True)
    for name in RUN_FILES:
        shutil.copyfile(domain_dir / name, target / name)
    shutil.copytree(domain_dir / RUNTIME_DIR, target / RUNTIME_DIR, copy_function=shutil.copyfile)
    return target
