"""STAND-INs for upstream LongMemEval-V2 ``evaluation/harness.py`` and ``evaluation/qa_eval_metrics.py``.

Upstream's code SHAPE (a module-level dict of domain prompts, a message builder whose text parts are
bound to local names, checker functions that call message builders returning ``[system, user]``),
with our own made-up words: no upstream text appears here. Tests write these sources to files and
point Mnemetric at them with their own sha256 as the pin, so the run-time extraction path runs for
real without the real files.

Each stand-in fails loudly if run: at top level it imports a package that does not exist, writes a
sentinel file into the working folder and raises SystemExit. :func:`no_execution` additionally makes
exec / eval / non-AST compile / importlib.import_module raise while extraction runs.

The sources are raw strings, so the file holds ``\\boxed{}`` with ONE backslash inside a normal
Python string, exactly the quirk of the real file: at run time that is U+0008 + "oxed{}".
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import hashlib
import importlib
from collections.abc import Iterator
from pathlib import Path

HARNESS_SENTINEL = "STANDIN_HARNESS_WAS_EXECUTED"
QA_SENTINEL = "STANDIN_QA_WAS_EXECUTED"

# The expected values, typed by hand (not computed from the sources below).
WEB_PROMPT = ("You are a stand-in helper for a toy shop and a toy forum. "
              "Unsure? Write exactly \\boxed{UNKNOWN}. "
              "A broken premise goes in \x08oxed{} with the reason.")
ENTERPRISE_PROMPT = ("You are a stand-in helper for a toy ticket desk. "
                     "Unsure? Write exactly \\boxed{UNKNOWN}. "
                     "A broken premise goes in \x08oxed{} with the reason.")
INTRO = "## Stand-in recollections:\n"
EMPTY_MARKER = "[nothing stored]"
QUESTION_HEAD = "\n\n## Stand-in question:\n"

ABS_SYSTEM = "Stand-in rubric one: did the reply spot the broken premise? Answer with a label."
GOT_SYSTEM = "Stand-in rubric two: did the reply carry the key hint?"


def abs_user(question: str, gold: str, full: str, final: str) -> str:
    """The stand-in abstention user message, written out by hand."""
    return (f"Stand-in task one.\n\nQ:\n{question}\n\nGold:\n{gold}\n\nWhole reply:\n{full}\n\n"
            f"Boxed part:\n{final}\n\nReturn JSON: {{\"label\": 0 or 1}}")


def got_user(question: str, gold: str, full: str, final: str) -> str:
    """The stand-in gotchas user message, written out by hand (fields in another order)."""
    return f"Stand-in task two.\nHint list: {gold}\nAsked: {question}\nBoxed: {final}\nReply: {full}\nJSON only."


HARNESS_STAND_IN = r'''#!/usr/bin/env python3
import base64
import mimetypes
from pathlib import Path

from memory_modules.memory import MemoryContextItem  # not installed: importing this file fails

with open("STANDIN_HARNESS_WAS_EXECUTED", "w") as fh:
    fh.write("executed")
raise SystemExit("stand-in harness executed!")

CATEGORY_MAP = {"alpha": "a", "beta": "b"}
DOMAIN_SYSTEM_PROMPTS = {
    "web": (
        "You are a stand-in helper for a toy shop and a toy forum. "
        "Unsure? Write exactly \\boxed{UNKNOWN}. "
        "A broken premise goes in \boxed{} with the reason."
    ),
    "enterprise": (
        "You are a stand-in helper for a toy ticket desk. "
        "Unsure? Write exactly \\boxed{UNKNOWN}. "
        "A broken premise goes in \boxed{} with the reason."
    ),
}


def to_data_url(image_path):
    path = Path(image_path)
    mime, _ = mimetypes.guess_type(str(path))
    return "data:%s;base64,%s" % (mime or "image/png", base64.b64encode(path.read_bytes()).decode("ascii"))


def build_messages(system_prompt, question_text, image_path, memory_context):
    head = "## Stand-in recollections:\n"
    if not memory_context:
        head += "[nothing stored]"
    content_parts = [{"type": "text", "text": head}]
    log_parts = [{"type": "text", "text": head}]
    for item in memory_context:
        if item["type"] == "text":
            content_parts.append({"type": "text", "text": item["value"]})
            log_parts.append({"type": "text", "text": item["value"]})
        else:
            content_parts.append({"type": "image_url", "image_url": {"url": to_data_url(item["value"])}})
            log_parts.append({"type": "image_path", "image_path": item["value"]})
    ask = f"\n\n## Stand-in question:\n{question_text}"
    content_parts.append({"type": "text", "text": ask})
    log_parts.append({"type": "text", "text": ask})
    if image_path is not None:
        content_parts.append({"type": "image_url", "image_url": {"url": to_data_url(image_path)}})
        log_parts.append({"type": "image_path", "image_path": image_path})
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": content_parts}]
    return messages, [{"role": "system", "content": system_prompt}, {"role": "user", "content": log_parts}]


def main():
    print("{} questions".format(3))


if __name__ == "__main__":
    main()
'''

QA_STAND_IN = r'''import json
import os
import re

import stand_in_missing_package  # not installed: importing this file fails

with open("STANDIN_QA_WAS_EXECUTED", "w") as fh:
    fh.write("executed")
raise SystemExit("stand-in qa_eval_metrics executed!")

DEFAULT_SEPARATORS = (",", ";")
_RUBRIC_ABS = (
    "Stand-in rubric one: did the reply spot the broken premise? "
    "Answer with a label."
)
_RUBRIC_GOT = "Stand-in rubric two: " "did the reply carry the key hint?"


def _stringify_text(value):
    return "" if value is None else str(value).strip()


def llm_abstention_checker(prediction, answer, *, question_item=None, parsed_prediction=None,
                           model_response=None, **_):
    prediction_text = _stringify_text(prediction)
    answer_text = _stringify_text(answer)
    if not prediction_text or not answer_text:
        return False
    final_answer_text = _stringify_text(parsed_prediction) or prediction_text
    messages = _abs_messages(
        question_text=_stringify_text(question_item),
        reference_answer=answer_text,
        model_full_response=_stringify_text(model_response) or prediction_text,
        model_final_answer=final_answer_text,
    )
    return json.loads(os.environ["NEVER"])["label"] == 1 and bool(messages)


def llm_gotchas_checker(prediction, answer, **kwargs):
    messages = _got_messages(question_text="", reference_answer=answer, model_full_response=prediction,
                             model_final_answer=prediction)
    return bool(re.search("x", str(messages)))


def _abs_messages(*, question_text, reference_answer, model_full_response, model_final_answer):
    user_prompt = (
        "Stand-in task one.\n\n"
        "Q:\n"
        f"{question_text}\n\n"
        "Gold:\n"
        f"{reference_answer}\n\n"
        "Whole reply:\n"
        f"{model_full_response}\n\n"
        "Boxed part:\n"
        f"{model_final_answer}\n\n"
        'Return JSON: {"label": 0 or 1}'
    )
    return [
        {"role": "system", "content": _RUBRIC_ABS},
        {"role": "user", "content": user_prompt},
    ]


def _got_messages(*, question_text, reference_answer, model_full_response, model_final_answer):
    return [
        {"role": "system", "content": _RUBRIC_GOT},
        {"role": "user", "content": f"Stand-in task two.\nHint list: {reference_answer}\nAsked: {question_text}\n"
                                    f"Boxed: {model_final_answer}\nReply: {model_full_response}\nJSON only."},
    ]


def mc_choice_match(prediction, answer, **_):
    return "{}".format(prediction) == answer
'''


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_checkout(root: Path, harness: str = HARNESS_STAND_IN, qa: str = QA_STAND_IN) -> Path:
    """Write the stand-ins where a LongMemEval-V2 checkout keeps them; return the checkout folder."""
    for rel, text in (("evaluation/harness.py", harness), ("evaluation/qa_eval_metrics.py", qa)):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@contextlib.contextmanager
def no_execution() -> Iterator[None]:
    """Inside: exec, eval, compile (other than to an AST) and importlib.import_module raise."""
    saved = builtins.exec, builtins.eval, builtins.compile, importlib.import_module
    real_compile = builtins.compile

    def forbidden(*args, **kwargs):
        raise AssertionError("the upstream file must never be executed, evaluated or imported")

    def ast_only_compile(source, filename, mode, flags=0, *args, **kwargs):
        if not flags & ast.PyCF_ONLY_AST:
            raise AssertionError("compile() to code object during extraction")
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    builtins.exec, builtins.eval, builtins.compile, importlib.import_module = (
        forbidden, forbidden, ast_only_compile, forbidden)
    try:
        yield
    finally:
        builtins.exec, builtins.eval, builtins.compile, importlib.import_module = saved
