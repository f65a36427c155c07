"""Differential parity of the V2 reader / checker texts and requests against upstream's own code.

Opt in with MNEMETRIC_LONGMEMEVAL_V2_DIR=<a checkout of xiaowu0162/LongMemEval-V2 at be15ea6>; no
upstream code is in this repository. Every upstream file is verified against its pinned sha256
(mnemetric.longmemeval_v2.upstream_text.KNOWN_PINS) before use. Comparisons are exact (==).

How upstream is run here:
* qa_eval_metrics.py imports only the standard library: it is imported from the checkout and its
  own message builders and checker functions are called (the checkers against a loopback
  OpenAI-compatible server, which records the request they send).
* harness.py cannot be imported without upstream's memory packages (openai-agents ...). Its
  DOMAIN_SYSTEM_PROMPTS assignment alone is compiled and run (a second reading of the constant, by
  Python's compiler instead of our parser + literal_eval), and only the pure functions needed —
  require, to_data_url, build_messages, extract_text_from_response_message, build_extra_body,
  build_reader_request, parse_args — are compiled from their ast nodes and called on our inputs.
* run_eval.py: only its parse_args (and the constants it reads) is compiled, to read the defaults.
"""

from __future__ import annotations

import argparse
import ast
import base64
import hashlib
import importlib.util
import mimetypes
import os
import random
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Tuple

import pytest

from mnemetric.longmemeval_v2 import upstream_text as ut
from mnemetric.longmemeval_v2.requests import (
    checker_messages,
    checker_params,
    checker_precheck,
    reader_log_messages,
    reader_messages,
    reader_params,
    response_text,
)
from mnemetric.longmemeval_v2.upstream_text import (
    CHECKER_NAMES,
    KNOWN_PINS,
    load_checker_texts,
    load_reader_texts,
    reader_texts,
)
from tests.support.openai_server import FakeOpenAIServer

N_READER = 300
N_RESPONSE = 500
N_PARAMS = 500
N_BUILDER = 1000
N_CALLS = 100
ALPHABET = ["a", "Z", "0", " ", "  ", "\n", "\t", "{", "}", "{}", "\\", "\\b", "\x08", "é", "中", "🙂", "%s", "'", '"',
            "\\boxed{x}", "label", ":"]


@pytest.fixture(scope="module")
def checkout() -> Path:
    root = os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR")
    if not root:
        pytest.skip("set MNEMETRIC_LONGMEMEVAL_V2_DIR to a LongMemEval-V2 checkout at be15ea6 to run V2 parity checks")
    return Path(root)


def upstream_source(checkout: Path, path: str) -> str:
    pin = KNOWN_PINS.pin(ut.REPO, ut.REVISION, path)
    data = (checkout / path).read_bytes()
    assert hashlib.sha256(data).hexdigest() == pin.sha256, f"{checkout / path} is not {path} @ {ut.REVISION}"
    return data.decode("utf-8")


def compiled(source: str, filename: str, names: set[str], namespace: dict) -> dict:
    """Run ONLY the module-level defs / assignments named in ``names`` (test-time differential use)."""
    tree = ast.parse(source, filename)
    nodes = [n for n in tree.body if (isinstance(n, (ast.FunctionDef, ast.Assign)) and
             (n.name if isinstance(n, ast.FunctionDef) else getattr(n.targets[0], "id", None)) in names)]
    assert len(nodes) == len(names), f"{filename}: found {len(nodes)} of {sorted(names)}"
    exec(compile(ast.Module(nodes, []), filename, "exec"), namespace)  # noqa: S102 - opt-in differential test
    return namespace


def rand_text(rng: random.Random, max_len: int = 12) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, max_len)))


@pytest.fixture(scope="module")
def harness(checkout) -> dict:
    ns = {"base64": base64, "mimetypes": mimetypes, "Path": Path, "Any": Any, "Dict": Dict, "List": List,
          "Optional": Optional, "Tuple": Tuple, "MemoryContextItem": dict, "argparse": argparse}
    names = {"require", "to_data_url", "build_messages", "extract_text_from_response_message", "build_extra_body",
             "build_reader_request", "parse_args"}
    return compiled(upstream_source(checkout, ut.HARNESS_PATH), "harness.py", names, ns)


@pytest.fixture(scope="module")
def qa_module(checkout):
    upstream_source(checkout, ut.QA_EVAL_METRICS_PATH)
    spec = importlib.util.spec_from_file_location("lme_v2_upstream_qa_eval_metrics", checkout / ut.QA_EVAL_METRICS_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- pins and texts


def test_pinned_files_verify(checkout):
    paths = [r.file.path for r in KNOWN_PINS if r.file.revision == ut.REVISION]
    assert {ut.HARNESS_PATH, ut.QA_EVAL_METRICS_PATH, ut.RUN_EVAL_PATH} <= set(paths)
    for path in paths:
        upstream_source(checkout, path)


def test_reader_texts_are_pinned_and_match_the_facts(checkout, tmp_path):
    texts = load_reader_texts(str(checkout), tmp_path, download=False)
    assert texts.is_pinned and texts.texts_sha256 == ut.READER_TEXTS_SHA256
    facts = {"web": (548, "c70772c5f4ab1dbdcee28218d5e2b98595a84d64196012cbd00bb9de9e63fd1f"),
             "enterprise": (393, "b2d24d41b022824ddea06b61255ead1a9aceae79e4f1658775fddd6d6e66320e")}
    for domain, (size, digest) in facts.items():
        data = texts.system_prompts[domain].encode("utf-8")
        assert (len(data), hashlib.sha256(data).hexdigest()) == (size, digest)
        assert texts.system_prompts[domain].count("\x08oxed{}") == 1  # the single-backslash quirk


def test_system_prompts_equal_the_compiled_constant(checkout, tmp_path):
    ns = compiled(upstream_source(checkout, ut.HARNESS_PATH), "harness.py", {"DOMAIN_SYSTEM_PROMPTS"}, {})
    assert load_reader_texts(str(checkout), tmp_path, download=False).system_prompts == ns["DOMAIN_SYSTEM_PROMPTS"]


def test_checker_texts_are_pinned_and_equal_the_module_constants(checkout, tmp_path, qa_module):
    texts = load_checker_texts(str(checkout), tmp_path, download=False)
    assert texts.is_pinned and texts.texts_sha256 == ut.CHECKER_TEXTS_SHA256
    assert texts.checkers["llm_abstention_checker"].system == qa_module._ABSTENTION_JUDGE_SYSTEM_PROMPT
    assert texts.checkers["llm_gotchas_checker"].system == qa_module._GOTCHAS_JUDGE_SYSTEM_PROMPT


def test_harness_at_c5c552d_gives_the_same_reader_texts(checkout):
    try:
        data = subprocess.run(["git", "-C", str(checkout), "show", f"{ut.REVISION_C5C552D}:{ut.HARNESS_PATH}"],
                              capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("the checkout has no git history for c5c552d")
    assert hashlib.sha256(data).hexdigest() == KNOWN_PINS.pin(ut.REPO, ut.REVISION_C5C552D, ut.HARNESS_PATH).sha256
    assert reader_texts(data.decode("utf-8")).texts_sha256 == ut.READER_TEXTS_SHA256


# ---------------------------------------------------------------- reader requests


def test_reader_messages_equal_build_messages(checkout, harness, tmp_path):
    texts = load_reader_texts(str(checkout), tmp_path / "cache", download=False)
    rng = random.Random(11)
    images = []
    for i, ext in enumerate([".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".bin", ""]):
        path = tmp_path / f"img{i}{ext}"
        path.write_bytes(rng.randbytes(rng.randint(0, 300)))
        images.append(str(path))
    for case in range(N_READER):
        items = [{"type": "text", "value": rand_text(rng) or "x"} if rng.random() < 0.7 else
                 {"type": "image", "value": rng.choice(images)} for _ in range(rng.choice([0, 0, 1, 3, 8]))]
        question, image = rand_text(rng) or "?", rng.choice([None, None, rng.choice(images)])
        domain = rng.choice(ut.DOMAINS)
        expected, expected_log = harness["build_messages"](texts.system_prompts[domain], question, image, items)
        assert reader_messages(domain, items, question, image, texts) == expected, case
        assert reader_log_messages(domain, items, question, image, texts) == expected_log, case


def _rand_message(rng: random.Random) -> dict:
    def maybe_text() -> Any:
        return rng.choice([None, "", "   ", rand_text(rng), 3])
    content = rng.choice([maybe_text(), [{"type": "text", "text": maybe_text()} for _ in range(rng.randint(0, 4))]])
    message = {"content": content}
    if rng.random() < 0.6:
        message["reasoning"] = maybe_text()
    return message


def test_response_text_equals_extract_text_from_response_message(harness):
    rng = random.Random(5)
    for case in range(N_RESPONSE):
        message = _rand_message(rng)
        upstream = harness["extract_text_from_response_message"](SimpleNamespace(**message))
        assert response_text(message) == (upstream or None), (case, message)


def _rand_args(rng: random.Random) -> argparse.Namespace:
    pick = rng.choice
    return argparse.Namespace(
        model=pick(["Qwen/Qwen3.5-9B", "qwen/qwen3.5-9b", "gpt-4o"]), base_url=pick([None, "", "http://h:1/v1"]),
        max_completion_tokens=pick([1, 20000, 4096]), reasoning_effort=pick([None, "low", "high"]),
        temperature=pick([None, 0.0, 0.6]), top_p=pick([None, 0.95]), presence_penalty=pick([None, 1.5]),
        top_k=pick([None, 20, 1]), repetition_penalty=pick([None, 1.05]), reader_enable_thinking=pick([True, False]),
        timeout_seconds=43200.0)


def _ours(args: argparse.Namespace) -> dict:
    return reader_params(args.model, base_url=args.base_url, temperature=args.temperature, top_p=args.top_p,
                         top_k=args.top_k, max_tokens=args.max_completion_tokens,
                         enable_thinking=args.reader_enable_thinking, reasoning_effort=args.reasoning_effort,
                         presence_penalty=args.presence_penalty, repetition_penalty=args.repetition_penalty)


def test_reader_params_equal_build_reader_request(harness):
    rng = random.Random(9)
    for case in range(N_PARAMS):
        args = _rand_args(rng)
        upstream = harness["build_reader_request"](args, ["m"])
        without = [(k, v) for k, v in upstream.items() if k not in ("messages", "timeout")]
        assert list(_ours(args).items()) == without, (case, args)


def test_run_eval_defaults_give_our_default_requests(checkout, harness, monkeypatch):
    for var in [v for v in os.environ if v.startswith(("READER_", "EVALUATOR_"))]:
        monkeypatch.delenv(var)
    run_eval = compiled(upstream_source(checkout, ut.RUN_EVAL_PATH), "run_eval.py",
                        {"METHODS", "OPENAI_SDK_TIMEOUT_SECONDS_BY_REASONING_EFFORT", "parse_args"},
                        {"argparse": argparse, "os": os})
    monkeypatch.setattr(sys, "argv", ["run_eval", "--data-root", "d", "--domain", "web", "--method", "no_retrieval",
                                      "--output-dir", "o"])
    a = run_eval["parse_args"]()
    argv = ["harness", "--domain", "web", "--questions-path", "q", "--haystack-path", "h", "--trajectories-path", "t",
            "--memory-config-path", "m", "--output-dir", "o", "--model", a.reader_model, "--base-url", a.reader_base_url,
            "--temperature", str(a.reader_temperature), "--top-p", str(a.reader_top_p), "--top-k", str(a.reader_top_k),
            "--max-completion-tokens", str(a.max_completion_tokens), "--evaluator-model", a.evaluator_model,
            "--evaluator-reasoning-effort", a.evaluator_reasoning_effort,
            "--evaluator-max-completion-tokens", str(a.evaluator_max_completion_tokens)]  # as run_eval.main passes them
    monkeypatch.setattr(sys, "argv", argv)
    h = harness["parse_args"]()
    upstream = {k: v for k, v in harness["build_reader_request"](h, []).items() if k not in ("messages", "timeout")}
    assert reader_params(base_url=a.reader_base_url) == upstream
    assert checker_params() == {"model": h.evaluator_model, "max_completion_tokens": h.evaluator_max_completion_tokens,
                                "reasoning_effort": h.evaluator_reasoning_effort}


# ---------------------------------------------------------------- checker requests


BUILDERS = {"llm_abstention_checker": "_build_abstention_judge_messages",
            "llm_gotchas_checker": "_build_gotchas_judge_messages"}


@pytest.mark.parametrize("name", CHECKER_NAMES)
def test_checker_templates_equal_upstream_builders(checkout, tmp_path, qa_module, name):
    texts = load_checker_texts(str(checkout), tmp_path, download=False)
    rng = random.Random(len(name))
    for case in range(N_BUILDER):
        values = {f: rand_text(rng, 20) for f in ut.CHECKER_FIELDS}
        expected = getattr(qa_module, BUILDERS[name])(**values)
        prompt = texts.checkers[name]
        assert [{"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user.fill(values)}] == expected, case


@pytest.mark.parametrize("name", CHECKER_NAMES)
def test_checker_requests_equal_what_upstream_sends(checkout, tmp_path, qa_module, name):
    """Upstream's checker called as harness.score_prediction calls it; the server records its request."""
    texts = load_checker_texts(str(checkout), tmp_path, download=False)
    rng = random.Random(100 + len(name))
    calls = skipped = 0
    with FakeOpenAIServer(reply=lambda _messages: '{"label": 1, "reason": "ok"}') as server:
        for case in range(N_CALLS):
            raw, gold, parsed = (rng.choice(["", " \n "]) if rng.random() < p else rand_text(rng) for p in (0.15, 0.15, 0.3))
            question = rand_text(rng)
            item = rng.choice([{"question": {"text": question, "image": None}}, {"question": question}])
            before = server.count
            label = getattr(qa_module, name)(
                raw, gold, question_item=item, parsed_prediction=parsed, model_response=raw, evaluator_model="gpt-5.2",
                evaluator_base_url=server.base_url, evaluator_api_key="sk-test", evaluator_reasoning_effort="medium",
                evaluator_max_completion_tokens=4096, evaluator_timeout_seconds=60.0)
            if not checker_precheck(raw, gold):
                assert label is False and server.count == before, case
                skipped += 1
                continue
            assert server.count == before + 1, case
            expected = {**checker_params(), "messages": checker_messages(name, question, gold, raw, parsed, texts)}
            assert server.requests[-1].body == expected, case
            calls += 1
    assert calls > 40 and skipped > 10  # both branches really ran
    print(f"{name}: {calls} requests equal, {skipped} prechecked without a call")
