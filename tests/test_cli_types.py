"""Issue 19, item 7: every numeric option of `mnemetric` is checked by argparse, never a traceback.

Before: ``judge --max-concurrency 0`` reached the executor and raised; ``--max-usd -1``, a negative
``--max-requests`` or ``--seed`` were accepted or crashed later.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from mnemetric.cli import build_parser, main
from mnemetric.cli import types


def _actions(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, (*path, name))
        else:
            yield path, action


def test_no_numeric_option_uses_bare_int_or_float():
    bare = [(" ".join(path), action.option_strings or action.dest) for path, action in _actions(build_parser())
            if action.type in (int, float)]
    assert bare == []


def test_the_walk_sees_the_numeric_options():
    seen = {(" ".join(path), action.option_strings[0]) for path, action in _actions(build_parser())
            if action.type in (types.positive_int, types.count, types.amount, types.positive_number)}
    assert {("judge", "--max-concurrency"), ("answer", "--max-usd"), ("v2 run", "--concurrency"),
            ("compare", "--resamples"), ("sample", "--seed")} <= seen


@pytest.mark.parametrize("args, option, wording", [
    (["judge", "h.jsonl", "r.json", "--max-concurrency", "0"], "--max-concurrency", "an integer >= 1, got '0'"),
    (["judge", "h.jsonl", "r.json", "--max-requests", "-1"], "--max-requests", "an integer >= 0, got '-1'"),
    (["judge", "h.jsonl", "r.json", "--max-usd", "-1"], "--max-usd", "a finite number >= 0, got '-1'"),
    (["judge", "h.jsonl", "r.json", "--max-usd", "inf"], "--max-usd", "a finite number >= 0, got 'inf'"),
    (["answer", "c.jsonl", "--adapted", "a", "--out", "o", "--reader", "r", "--max-concurrency", "-2"],
     "--max-concurrency", "an integer >= 1"),
    (["score-retrieval", "l", "--granularity", "turn", "--profile", "p", "--out", "o", "--ks", "0"], "--ks",
     "integers >= 1"),
    (["score-retrieval", "l", "--granularity", "turn", "--profile", "p", "--out", "o", "--resamples", "-5"],
     "--resamples", "an integer >= 0"),
    (["compare", "a", "b", "--resamples", "0"], "--resamples", "an integer >= 1, got '0'"),
    (["report", "--seed", "-1"], "--seed", "an integer >= 0, got '-1'"),
    (["retrieve", "d.json", "--memory", "bm25", "--granularity", "session", "--out", "o", "--context-k", "0"],
     "--context-k", "an integer >= 1"),
    (["sample", "--synthetic", "-3"], "--synthetic", "an integer >= 0"),
    (["crosscheck", "--upstream-dir", ".", "--out", "o", "--judge-timeout", "0"], "--judge-timeout",
     "a finite number > 0"),
    (["v2", "compare", "a", "b", "--resamples", "x"], "--resamples", "an integer >= 1, got 'x'"),
])
def test_bad_numeric_option_is_a_usage_error(capsys, args, option, wording):
    with pytest.raises(SystemExit) as info:
        main(args)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert f"argument {option}: " in err and wording in err
    assert "Traceback" not in err


def test_max_concurrency_zero_in_a_real_process():
    done = subprocess.run([sys.executable, "-m", "mnemetric.cli", "judge", "h.jsonl", "r.json",
                           "--max-concurrency", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "argument --max-concurrency: must be an integer >= 1, got '0'" in done.stderr
    assert "Traceback" not in done.stderr
