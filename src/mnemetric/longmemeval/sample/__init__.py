"""Mnemetric's sample generator: LongMemEval (V1)-format data authored by Mnemetric, never upstream's.

Everything is built from the phrase banks in ``banks/*.json`` (package data) by slot
filling driven only by ``random.Random(seed)``: no network, no model, no upstream text; one seed
always gives the same bytes. The output uses the upstream instance schema as typed records
(mnemetric.longmemeval.instance: Instance, Session, Turn) serialised with ``Instance.to_record()``.

    banks.py       the typed phrase banks, read from banks/*.json (bankfile.py: the checked field reader)
    questions.py   one builder per question type (and its scenarios): a question plan
    haystack.py    answer and filler sessions, ids, dates → an Instance
    dates.py       upstream date text and timestamps
    bundled.py     the committed sample (data/sample/longmemeval_sample.json)
    synthetic.py   large haystacks for benchmarks
    output.py      the bytes: streamed JSON, atomic write, sha256

Command line: ``mnemetric sample``, see mnemetric.cli.sample.
"""

from __future__ import annotations

from mnemetric.longmemeval.sample.banks import Banks, load_banks
from mnemetric.longmemeval.sample.bundled import DEFAULT_SEED, generate_sample
from mnemetric.longmemeval.sample.output import DEFAULT_OUT, instances_sha256, json_list_chunks, write_instances
from mnemetric.longmemeval.sample.questions import QUESTION_TYPES
from mnemetric.longmemeval.sample.synthetic import generate_synthetic

__all__ = [
    "DEFAULT_OUT",
    "DEFAULT_SEED",
    "QUESTION_TYPES",
    "Banks",
    "generate_sample",
    "generate_synthetic",
    "instances_sha256",
    "json_list_chunks",
    "load_banks",
    "write_instances",
]
