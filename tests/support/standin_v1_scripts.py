"""STAND-INS for upstream LongMemEval's print_retrieval_metrics.py and print_qa_metrics.py.

Our own code (plain Python, no numpy) that prints in upstream's output format: the same lines and
number formats (4-decimal rounding, ``nan`` for an empty bucket). No upstream code is here. Tests
write them into a fake checkout (with placeholder eval_utils.py / evaluate_qa.py) and pass their
sha256 as the expected hashes, so ``mnemetric crosscheck`` runs for real without the real files.
``shift`` adds an amount to one printed number (keyed like the cross-check's metric names:
``session.ndcg_any@10``, ``overall``, ``single-session-user.accuracy``) to make a check fail.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from tests.support.standin_evaluate_qa import STAND_IN as EVALUATE_QA_STAND_IN

RETRIEVAL = '''\
"""Stand-in retrieval summary (Mnemetric test code, upstream's output format)."""
import json
import sys

SHIFT = {shift!r}
LEVELS = {{
    "session": ["recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10"],
    "turn": ["recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10", "recall_all@50", "ndcg_any@50"],
}}
HEADERS = {{"session": "Session-level metrics:", "turn": "Turn-level metrics:"}}

rows = []
with open(sys.argv[1], encoding="utf-8") as fh:
    for text in fh:
        if text.strip():
            record = json.loads(text)
            if "_abs" not in record["question_id"]:
                rows.append(record["retrieval_results"]["metrics"])
for level, names in LEVELS.items():
    print(HEADERS[level])
    try:
        parts = []
        for name in names:
            values = [row[level][name] for row in rows]
            value = round(sum(values) / len(values) + SHIFT.get(level + "." + name, 0.0), 4)
            parts.append("\\t" + name + " = " + str(value))
        print(", ".join(parts))
    except (KeyError, ZeroDivisionError):
        pass
'''

QA = '''\
"""Stand-in QA summary (Mnemetric test code, upstream's output format)."""
import json
import sys

SHIFT = {shift!r}
TYPES = ["single-session-user", "single-session-preference", "single-session-assistant",
         "multi-session", "temporal-reasoning", "knowledge-update"]

with open(sys.argv[1], encoding="utf-8") as fh:
    judged = [json.loads(text) for text in fh if text.strip()]
with open(sys.argv[2], encoding="utf-8") as fh:
    kinds = {{item["question_id"]: item["question_type"] for item in json.load(fh)}}
buckets = {{kind: [] for kind in TYPES}}
declined = []
for entry in judged:
    if entry["autoeval_label"]["model"] != "gpt-4o-2024-08-06":
        sys.exit("stand-in: not the official judge model")
    mark = 1 if entry["autoeval_label"]["label"] else 0
    buckets[kinds[entry["question_id"]]].append(mark)
    if "_abs" in entry["question_id"]:
        declined.append(mark)


def share(values, key):
    if not values:
        return float("nan")
    return sum(values) / len(values) + SHIFT.get(key, 0.0)


def show(value):
    return "nan" if value != value else str(round(value, 4))


print()
print("Evaluation results by task:")
for kind in TYPES:
    print("\\t" + kind + ": " + show(share(buckets[kind], kind + ".accuracy")) + " (" + str(len(buckets[kind])) + ")")
means = [share(buckets[kind], "") for kind in TYPES]
print()
print("Task-averaged Accuracy:", show(sum(means) / len(means) + SHIFT.get("task_averaged", 0.0)))
print("Overall Accuracy:", show(share([m for kind in TYPES for m in buckets[kind]], "overall")))
print("Abstention Accuracy:", show(share(declined, "abstention.accuracy")), "(" + str(len(declined)) + ")")
'''

EVALUATE_QA_RUNNABLE = '''\
"""Stand-in judge (Mnemetric test code): upstream's command line and result file, our own prompt."""
import json
import os
import sys
import urllib.request

alias, hyp_file, ref_file = sys.argv[1:4]
with open(ref_file, encoding="utf-8") as fh:
    refs = {item["question_id"]: item for item in json.load(fh)}
with open(hyp_file, encoding="utf-8") as fh:
    hyps = [json.loads(text) for text in fh if text.strip()]
url = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"
headers = {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
marks = []
with open(hyp_file + ".eval-results-" + alias, "w", encoding="utf-8") as out:
    for entry in hyps:
        ref = refs[entry["question_id"]]
        prompt = "Grade it. Q: " + ref["question"] + " Gold: " + str(ref["answer"]) + " Reply: " + entry["hypothesis"]
        body = {"model": "gpt-4o-2024-08-06", "messages": [{"role": "user", "content": prompt}],
                "n": 1, "temperature": 0, "max_tokens": 10}
        request = urllib.request.Request(url, json.dumps(body).encode(), headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            reply = json.load(response)["choices"][0]["message"]["content"]
        entry["autoeval_label"] = {"model": "gpt-4o-2024-08-06", "label": "yes" in reply.strip().lower()}
        marks.append(1 if entry["autoeval_label"]["label"] else 0)
        out.write(json.dumps(entry) + "\\n")
print("Accuracy:", round(sum(marks) / len(marks), 4))
'''
"""A runnable judge stand-in (the default evaluate_qa.py stand-in refuses to run)."""

EVAL_UTILS = '"""Stand-in placeholder for src/retrieval/eval_utils.py (hashed, never run)."""\n'

PATHS = {
    "retrieval": "src/evaluation/print_retrieval_metrics.py",
    "qa": "src/evaluation/print_qa_metrics.py",
    "eval_utils": "src/retrieval/eval_utils.py",
    "evaluate_qa": "src/evaluation/evaluate_qa.py",
}


def write_standins(checkout: Path, shift: Mapping[str, float] | None = None, *,
                   retrieval: str | None = None, qa: str | None = None,
                   evaluate_qa: str | None = None) -> dict[str, str]:
    """Write the four stand-in files into ``checkout``; return {relative path: sha256}.

    ``retrieval`` / ``qa`` / ``evaluate_qa`` replace a script's text entirely (e.g. one that crashes,
    or :data:`EVALUATE_QA_RUNNABLE`).
    """
    texts = {
        PATHS["retrieval"]: retrieval if retrieval is not None else RETRIEVAL.format(shift=dict(shift or {})),
        PATHS["qa"]: qa if qa is not None else QA.format(shift=dict(shift or {})),
        PATHS["eval_utils"]: EVAL_UTILS,
        PATHS["evaluate_qa"]: evaluate_qa if evaluate_qa is not None else EVALUATE_QA_STAND_IN,
    }
    hashes = {}
    for rel, text in texts.items():
        path = checkout / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def expected_args(hashes: Mapping[str, str]) -> list[str]:
    """``--expected-sha256 PATH=SHA`` arguments for the CLI."""
    return [arg for rel, sha in hashes.items() for arg in ("--expected-sha256", f"{rel}={sha}")]
