"""Opt-in differential tests of the V2 runtime against upstream's own harness.py functions.

Set MNEMETRIC_LONGMEMEVAL_V2_DIR to a checkout of xiaowu0162/LongMemEval-V2 at be15ea6 (skipped otherwise).
harness.py is verified by sha256, then only these functions are taken out by parsing (ast) and run:
require, validate_memory_context_items, truncate_memory_context, all_haystacks_shared. (The module itself
cannot be imported here: memory_modules needs the openai-agents package.) truncate_memory_context's two
helpers that need the Qwen processor and PIL are given a test counter, so the search itself is compared.
"""

from __future__ import annotations

import ast
import hashlib
import os
import random
from pathlib import Path
from typing import Any

import pytest

from mnemetric.errors import PluginError
from mnemetric.longmemeval_v2.memory import is_shared, validate_items
from mnemetric.longmemeval_v2.tokens import fit_to_budget

HARNESS_SHA256 = "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1"
FUNCTIONS = ("require", "validate_memory_context_items", "truncate_memory_context", "all_haystacks_shared")


def counter(items) -> int:
    return 0 if not items else 3 + sum(len(i["value"]) + (50 if i["type"] == "image" else 0) for i in items)


@pytest.fixture(scope="module")
def upstream() -> dict[str, Any]:
    root = os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR")
    if not root:
        pytest.skip("set MNEMETRIC_LONGMEMEVAL_V2_DIR to a LongMemEval-V2 checkout at be15ea6 to run V2 parity checks")
    data = (Path(root) / "evaluation" / "harness.py").read_bytes()
    assert hashlib.sha256(data).hexdigest() == HARNESS_SHA256, "harness.py is not the pinned revision"
    tree = ast.parse(data.decode("utf-8"))
    wanted = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in FUNCTIONS]
    assert {n.name for n in wanted} == set(FUNCTIONS)
    ns: dict[str, Any] = {"Any": Any, "Path": Path, "MemoryContextItem": dict,
                          "load_memory_context_images": lambda items: [None] * len(items),
                          "count_memory_context_tokens": lambda items, _images: counter(items)}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "harness.py", "exec"), ns)  # noqa: S102
    return ns


def random_items(rng: random.Random, image: str) -> Any:
    if rng.random() < 0.05:
        return rng.choice([{"type": "text"}, "x", None, ()])
    items = []
    for _ in range(rng.randint(0, 6)):
        kind = rng.choice(["text", "text", "image", "audio", None])
        value = rng.choice(["abc", " ", "", 3, image, "/no/such.png", "x" * rng.randint(1, 30)])
        item = {"type": kind, "value": value} if rng.random() > 0.05 else rng.choice(["s", 1])
        if isinstance(item, dict) and rng.random() < 0.2:
            item["extra"] = 1
        items.append(item)
    return items


def test_item_validation_agrees(upstream, tmp_path):
    image = tmp_path / "i.png"
    image.write_bytes(b"x")
    rng = random.Random(7)
    for _ in range(3000):
        items = random_items(rng, str(image))
        try:
            theirs = upstream["validate_memory_context_items"](items, question_id="q")
        except RuntimeError:
            theirs = "abort"
        try:
            mine = validate_items(items, system="m", question_id="q")
        except PluginError:
            mine = "abort"
        assert mine == theirs, items


def test_budget_cut_agrees(upstream):
    rng = random.Random(11)
    for _ in range(3000):
        items = [{"type": rng.choice(["text", "image"]), "value": "v" * rng.randint(1, 40)}
                 for _ in range(rng.randint(0, 12))]
        budget = rng.randint(1, 400)
        theirs = upstream["truncate_memory_context"](items, max_tokens=budget, question_id="q")
        assert fit_to_budget(items, budget, counter) == tuple(theirs)


def test_shared_rule_agrees(upstream):
    rng = random.Random(3)
    for _ in range(2000):
        lists = {f"q{i}": rng.choice([["a", "b"], ["b", "a"], ["a"], ["a", "b", "c"]])
                 for i in range(rng.randint(0, 4))}
        ids = list(lists)
        assert is_shared([lists[q] for q in ids]) == upstream["all_haystacks_shared"](ids, lists)
