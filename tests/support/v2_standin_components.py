"""The V2 reader and LLM checkers with the STAND-IN texts (tests/support/standin_v2.py), as conf options a test's
own ``--conf`` folder names by ``_target_``: `mnemetric v2 run` then talks to a loopback server with no upstream
checkout (such a run is never official)."""

from __future__ import annotations

from typing import Any

from tests.support.standin_v2 import HARNESS_STAND_IN, QA_STAND_IN


def standin_reader(**kw: Any):
    from mnemetric.longmemeval_v2.reader import openai_reader
    from mnemetric.longmemeval_v2.upstream_text import reader_texts

    return openai_reader(texts=reader_texts(HARNESS_STAND_IN), **kw)


def standin_checker(**kw: Any):
    from mnemetric.longmemeval_v2.llm_checkers import llm_checkers
    from mnemetric.longmemeval_v2.upstream_text import checker_texts

    return llm_checkers(texts=checker_texts(QA_STAND_IN), **kw)
