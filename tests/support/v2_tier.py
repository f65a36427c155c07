"""An official-SHAPED LongMemEval-V2 tier for tests: the bundled V2 sample laid out as the Hugging Face dataset
(questions, trajectories, both haystacks, the screenshot archives and a checksums.sha256), served from a loopback
file server, with the test's OWN pins (the real tier is not available offline): a copy of the real pin table in
which every text file carries the sha256 of the bytes served here; the archives are vouched for by the served
checksums file, whose own sha256 the run pins with ``-S v2.checksums_sha256=`` exactly as a user would.

Layout of the archives as upstream's (data/public_data.py prepare_screenshots @ be15ea6): each holds one folder per
trajectory (web_screenshots: the web trajectories; enterprise_screenshots_base: the enterprise ones), linked to
``screenshots/<trajectory>`` after extraction. The questions' own images go in a folder per domain
(``q-web``, ``q-enterprise``), so ``questions.jsonl`` names them ``screenshots/q-<domain>/<file>``.

Also the conf targets of a reader and a checker that read the STAND-IN upstream texts (tests/support/standin_v2.py)
with the shipped options' own keys: the real ones read the pinned upstream files, which tests never download.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

from mnemetric.longmemeval_v2.pins import DATA_PINS, DataPins, FilePin

ARCHIVES = {"web": "trajectory_screenshots/web_screenshots.tar.gz",
            "enterprise": "trajectory_screenshots/enterprise_screenshots_base.tar.gz"}
TEXT_FILES = ("questions.jsonl", "trajectories.jsonl", "haystacks/lme_v2_small.json", "haystacks/lme_v2_medium.json")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def tier_files(sample: Path) -> dict[str, bytes]:
    """Every file of the dataset stand-in, by its path in the dataset (module docstring)."""
    lines = [json.loads(x) for x in (sample / "questions.jsonl").read_text(encoding="utf-8").splitlines() if x]
    members: dict[str, dict[str, bytes]] = {d: {} for d in ARCHIVES}
    for q in lines:
        if q.get("image"):
            name = f"q-{q['domain']}/{Path(q['image']).name}"
            members[q["domain"]][name] = (sample / q["image"]).read_bytes()
            q["image"] = f"screenshots/{name}"
    for raw in (sample / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        t = json.loads(raw)
        for state in t["states"]:
            rel = Path(state["screenshot"]).relative_to("screenshots").as_posix()
            members[t["domain"]][rel] = (sample / state["screenshot"]).read_bytes()
    files = {f: (sample / f).read_bytes() for f in TEXT_FILES}
    files["questions.jsonl"] = "".join(json.dumps(q) + "\n" for q in lines).encode()
    files |= {ARCHIVES[d]: _tar_gz(m) for d, m in members.items()}
    files["checksums.sha256"] = "".join(f"{sha256(b)}  ./{f}\n" for f, b in files.items()).encode()
    return files


def tier_pins(files: dict[str, bytes], pins: DataPins = DATA_PINS) -> DataPins:
    """The real pin table with the sha256 and size of each text file served here, the archives' sizes, and
    checksums.sha256 left unpinned (the run pins it, as a user does)."""
    def one(p: FilePin) -> FilePin:
        if p.file in TEXT_FILES:
            return dataclasses.replace(p, sha256=sha256(files[p.file]), size=len(files[p.file]))
        if p.file in files and p.file != "checksums.sha256":
            return dataclasses.replace(p, size=len(files[p.file]))
        return p
    return dataclasses.replace(pins, files=tuple(one(p) for p in pins.files))


def serve(server: Any, files: dict[str, bytes], pins: DataPins = DATA_PINS) -> None:
    """Put ``files`` on a :class:`tests.support.file_server.FileServer` at the Hub's resolve URLs."""
    for f, data in files.items():
        server.files[f"/datasets/{pins.repo}/resolve/{pins.revision}/{f}"] = data


def standin_reader(**keys: Any):
    """conf target: conf/v2/reader/openai.yaml's reader, on the stand-in harness texts."""
    from mnemetric.longmemeval_v2.reader import openai_reader
    from mnemetric.longmemeval_v2.upstream_text import reader_texts
    from tests.support.standin_v2 import HARNESS_STAND_IN

    return openai_reader(texts=reader_texts(HARNESS_STAND_IN), **keys)


def standin_checkers(**keys: Any):
    """conf target: conf/v2/checker/llm.yaml's checkers, on the stand-in qa_eval_metrics texts."""
    from mnemetric.longmemeval_v2.llm_checkers import llm_checkers
    from mnemetric.longmemeval_v2.upstream_text import checker_texts
    from tests.support.standin_v2 import QA_STAND_IN

    return llm_checkers(texts=checker_texts(QA_STAND_IN), **keys)
