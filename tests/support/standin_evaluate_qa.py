"""A STAND-IN for upstream evaluate_qa.py: upstream's code shape, our own made-up words.

No upstream text appears here. Tests write ``STAND_IN`` to a file and point Mnemetric at it (with
its own sha256 as the expected hash), so the upstream-judge path runs for real without the real
file. A top-level ``raise SystemExit`` makes any exec/import of the file fail loudly.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

T_DEFAULT = "Grading job A.\nQuery: {}\nReference: {}\nCandidate: {}\nReply with yes or no."
T_TEMPORAL = "Grading job B, lenient on small date offsets.\nQuery: {}\nReference: {}\nCandidate: {}\nReply with yes or no."
T_UPDATE = "Grading job C, the newest fact counts.\nQuery: {}\nReference: {}\nCandidate: {}\nReply with yes or no."
T_PREF = "Grading job D, personal taste.\nQuery: {}\nGuide: {}\nCandidate: {}\nReply with yes or no."
T_ABS = "Grading job E, unanswerable query.\nQuery: {}\nWhy: {}\nCandidate: {}\nDid it decline? Reply with yes or no."
EXPECTED = {
    "abstention": T_ABS,
    "default": T_DEFAULT,
    "temporal-reasoning": T_TEMPORAL,
    "knowledge-update": T_UPDATE,
    "single-session-preference": T_PREF,
}

# Shape 1: template variable assigned in each branch and formatted in the same branch.
STAND_IN = f'''\
import argparse
import json
import sys

raise SystemExit("executed!")  # parsing is fine; running this file is a test failure


def get_anscheck_prompt(task, question, answer, response, abstention=False):
    """Stand-in docstring {{}} {{}} that is not a template."""
    if not abstention:
        if task in ['single-session-user', 'single-session-assistant', 'multi-session']:
            template = {T_DEFAULT!r}
            prompt = template.format(question, answer, response)
        elif task == 'temporal-reasoning':
            template = {T_TEMPORAL!r}
            prompt = template.format(question, answer, response)
        elif task == 'knowledge-update':
            template = {T_UPDATE!r}
            prompt = template.format(question, answer, response)
        elif task == 'single-session-preference':
            template = {T_PREF!r}
            prompt = template.format(question, answer, response)
        else:
            raise NotImplementedError
    else:
        template = {T_ABS!r}
        prompt = template.format(question, answer, response)
    return prompt


def main(args):
    log = "{{}} entries written to {{}}".format(len(args), "somewhere")
    print(log)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('metric_model')
    main(parser.parse_args())
'''


def write_standin(checkout: Path, text: str = STAND_IN) -> str:
    """Write the stand-in where a LongMemEval checkout keeps evaluate_qa.py; return its sha256."""
    path = checkout / "src" / "evaluation" / "evaluate_qa.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return hashlib.sha256(path.read_bytes()).hexdigest()
