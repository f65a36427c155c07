"""Code that decides a number is a dependency: editing a plugged-in memory system reruns retrieval.

Measured before the fingerprint stage: after editing a plugged-in memory system's code (made it rank
worst-first), `dvc exp run` skipped every stage and kept reporting the old recall.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.docs.test_readme import readme_example

pytestmark = pytest.mark.e2e


def test_editing_a_plugged_in_memory_system_reruns_exactly_what_it_decides(reproduced_repo):
    plugins = reproduced_repo.path / "plugins"  # a dep of stage fingerprint (plugins/README.md)
    module = plugins / "kwmem.py"
    module.write_text(readme_example())
    (reproduced_repo.path / "conf/memory/keyword.yaml").write_text("_target_: kwmem.KeywordMemory\nname: keyword\n")
    reproduced_repo.run("git", "add", "-A")
    reproduced_repo.run("git", "commit", "-qm", "keyword memory")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(plugins), os.environ.get("PYTHONPATH")]))}  # the tree under test too
    # up to stage retrieval_metrics (fingerprint, retrieve and the recall it decides): the stages after it
    # (answer, judge, the manifests, ...) decide nothing this test reads
    args = ("exp", "run", "-S", "memory=keyword", "retrieval_metrics")

    reproduced_repo.dvc(*args, env=env)
    before = reproduced_repo.json("metrics/retrieval.json")["exclude_abs"]["session"]["recall_all@5"]
    fp_before = reproduced_repo.json("data/fingerprints/memory.json")
    assert fp_before["target"] == "kwmem.KeywordMemory" and list(fp_before["modules"]) == ["kwmem"]

    again = reproduced_repo.dvc(*args, env=env).stdout  # unchanged code: nothing reruns, the fingerprint included
    assert "Running stage" not in again, again

    code = module.read_text().replace("key=lambda x: (-x[0], -x[1])", "key=lambda x: (x[0], x[1])")
    assert code != module.read_text()
    module.write_text(code)  # now it ranks worst first
    out = reproduced_repo.dvc(*args, env=env).stdout
    assert "Running stage 'retrieve'" in out and "Running stage 'adapt'" not in out
    after = reproduced_repo.json("metrics/retrieval.json")["exclude_abs"]["session"]["recall_all@5"]
    assert after < before
    fp_after = reproduced_repo.json("data/fingerprints/memory.json")
    assert fp_after["sha256"] != fp_before["sha256"]
    assert json.loads((reproduced_repo.path / "data/fingerprints/adapter.json").read_text())["sha256"]
