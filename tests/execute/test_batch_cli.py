"""`mnemetric batch status|cancel|forget|export|import` and the export mode (executor=batch-export), against the
loopback server's Batches API; a ``vllm run-batch`` is stood in for by the server's own replies to the
exported lines (same line format)."""

from __future__ import annotations

import json

import pytest

from mnemetric.cli import main
from mnemetric.execute.batch import BatchExecutor
from mnemetric.execute.batch_remote import BatchError, BatchPending
from mnemetric.llm.cache import ResponseCache
from tests.support.batch_kill import Killed
from tests.support.batch_run import PRICES, calls
from tests.support.openai_server import FakeOpenAIServer


@pytest.fixture()
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-BATCH")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServer() as s:
        yield s


def run_batch_runner(server, infile, outfile) -> None:
    """What `vllm run-batch -i infile -o outfile` does, with the loopback server's replies."""
    lines = [json.loads(x) for x in infile.read_text().splitlines()]
    outfile.write_text("".join(json.dumps(server.batch._reply(x)) + "\n" for x in lines))


def export(server, out_dir, n: int):
    """Run ``n`` calls in export mode (it stops: the replies are not in); the batch file it wrote."""
    before = set(out_dir.glob("*.jsonl"))
    with BatchExecutor({"prices": PRICES}, mode="export", export_dir=str(out_dir), progress=False) as ex, \
            pytest.raises(BatchPending):
        ex.run(calls(server.base_url, n))
    [exported] = [p for p in out_dir.glob("*.jsonl") if p not in before]
    return exported


def test_export_then_import_then_the_rerun_sends_nothing(server, tmp_path, capsys):
    out_dir = tmp_path / "export"
    with BatchExecutor({"prices": PRICES}, mode="export", export_dir=str(out_dir), progress=False) as ex, \
            pytest.raises(BatchPending, match="vllm run-batch"):
        ex.run(calls(server.base_url, 3))
    [exported] = list(out_dir.glob("*.jsonl"))
    lines = [json.loads(x) for x in exported.read_text().splitlines()]
    assert [x["custom_id"] for x in lines] == [c.key for c in calls(server.base_url, 3)]
    assert {x["method"] for x in lines} == {"POST"} and {x["url"] for x in lines} == {"/v1/chat/completions"}
    assert lines[0]["body"] == {"model": "m", "messages": [{"role": "user", "content": "q0"}], "temperature": 0,
                                "max_tokens": 10}
    assert main(["batch", "export", "--out", str(tmp_path / "again")]) == 0  # the same bytes from the ledger
    assert (tmp_path / "again" / exported.name).read_bytes() == exported.read_bytes()
    # an output line for a request the ledger does not have: refused, nothing stored
    bad = tmp_path / "bad.jsonl"
    run_batch_runner(server, exported, bad)
    bad.write_text(bad.read_text().replace(lines[0]["custom_id"], "e" * 64))
    assert main(["batch", "import", str(bad)]) != 0
    assert "unknown custom_id" in capsys.readouterr().err
    with ResponseCache() as cache:
        assert len(cache) == 0
    out = tmp_path / "out.jsonl"
    run_batch_runner(server, exported, out)
    assert main(["batch", "import", str(out)]) == 0 and "3 stored" in capsys.readouterr().out
    assert main(["batch", "status", "--all", "--offline"]) == 0
    assert "done/- m chat, 3+0 of 3 done" in capsys.readouterr().out
    with ResponseCache() as cache:
        rows = {c.key: cache.get(c.key) for c in calls(server.base_url, 3)}
    assert main(["batch", "import", str(out)]) == 0  # the same file again: nothing added, nothing changed
    assert "0 stored" in (printed := capsys.readouterr().out) and "3 already stored" in printed, printed
    with ResponseCache() as cache:
        assert len(cache) == 3 and {c.key: cache.get(c.key) for c in calls(server.base_url, 3)} == rows
    with BatchExecutor({"prices": PRICES}, mode="export", export_dir=str(out_dir), progress=False) as ex:
        assert [o.text for o in ex.run(calls(server.base_url, 3))] == ["echo: q0", "echo: q1", "echo: q2"]
        assert ex.usage.requests_sent == 0 and ex.usage.work.to_dict()["batch_responses"] == 3
    assert server.count == 0 and server.batch.submitted == []


def test_status_cancel_and_forget(server, tmp_path, capsys):
    with BatchExecutor({"prices": PRICES}, wait=False, progress=False) as ex, pytest.raises(BatchPending):
        ex.run(calls(server.base_url, 2))
    bid = server.batch.only()
    assert main(["batch", "status"]) == 0
    assert f"{bid}: submitted/validating m chat, 0+0 of 2" in capsys.readouterr().out
    assert main(["batch", "cancel", bid]) == 0 and f"{bid}: cancelling" in capsys.readouterr().out
    server.batch.auto = True
    with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex, \
            pytest.raises(BatchError, match=f"batch {bid} .*CANCELLED"):
        ex.run(calls(server.base_url, 2))
    assert main(["batch", "status", "--all", "--offline"]) == 0 and "done/cancelled" in capsys.readouterr().out
    # a slot in the wrong state, or none named: named, non-zero, nothing done
    assert main(["batch", "cancel", bid]) != 0
    assert f"{bid} is done, not a submitted batch; nothing to cancel at a server" in capsys.readouterr().err
    assert main(["batch", "cancel"]) != 0 and "no batch named" in capsys.readouterr().err
    assert main(["batch", "cancel", "--all"]) != 0 and "no batch named" in capsys.readouterr().err
    assert main(["batch", "export", "--out", str(tmp_path / "x"), bid]) != 0
    assert f"{bid} is done, not exported: only requests no server" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    # forget goes name by name: the known one is dropped before the unknown one stops the command
    assert main(["batch", "forget", bid, "batch-nope"]) != 0
    out, err = capsys.readouterr()
    assert f"forgot {bid}" in out and "no batch or slot 'batch-nope'" in err
    assert main(["batch", "status", "--all", "--json"]) == 0 and json.loads(capsys.readouterr().out) == []
    assert main(["batch", "cancel", "batch-nope"]) != 0 and "no batch or slot" in capsys.readouterr().err


def test_importing_a_file_cut_at_a_line_boundary_says_what_is_still_unanswered(server, tmp_path, capsys):
    out_dir = tmp_path / "export"
    exported = export(server, out_dir, 3)
    slot = exported.stem
    whole = tmp_path / "out.jsonl"
    run_batch_runner(server, exported, whole)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(whole.read_text().splitlines(keepends=True)[:2]))  # every line whole: no JSON error
    for _ in range(2):  # the same cut file again: still said
        assert main(["batch", "import", str(cut)]) == 3
        printed = capsys.readouterr().out
        assert f"{slot}: 1 of 3 request(s) still have no stored reply (1 with no line in the file(s)" in printed
        assert f"the slot stays exported: run its requests again (`mnemetric batch export --out DIR {slot}`)" \
            in printed and "exit 3: 1 request(s) of 1 slot(s) still have no reply" in printed, printed
    assert "2 stored" not in printed and "2 already stored" in printed
    with ResponseCache() as cache:
        assert len(cache) == 2
    assert main(["batch", "status", "--offline"]) == 0
    assert f"{slot}: exported/- m chat, 2+0 of 3 done" in capsys.readouterr().out
    assert main(["batch", "import", str(whole)]) == 0  # the rest: the slot is done
    printed = capsys.readouterr().out
    assert "1 stored" in printed and "2 already stored" in printed and f"slots done: {slot}" in printed
    assert "still have no" not in printed
    # an error line is a request still without a reply, too
    server.batch.error_for = lambda key, body: 400
    fourth = export(server, out_dir, 4)
    run_batch_runner(server, fourth, tmp_path / "errors.jsonl")
    assert main(["batch", "import", str(tmp_path / "errors.jsonl")]) == 3
    printed = capsys.readouterr().out
    assert "1 error(s)" in printed and f"{fourth.stem}: 1 of 1 request(s) still have no stored reply (0 with no line" \
        in printed and "1 with an error, non-answer or malformed line" in printed, printed


def test_an_import_killed_before_marking_its_slot_done_is_settled_by_the_rerun(server, tmp_path, monkeypatch):
    from mnemetric.execute.batch_collect import SETTLED
    from mnemetric.llm.batch_ledger import Ledger

    out_dir = tmp_path / "export"
    exported = export(server, out_dir, 3)
    run_batch_runner(server, exported, tmp_path / "out.jsonl")

    def die(self, slot, **kw):
        raise Killed  # the replies are cached; the slot still says "exported"

    with monkeypatch.context() as m:
        m.setattr(Ledger, "finish", die)
        with pytest.raises(Killed):
            main(["batch", "import", str(tmp_path / "out.jsonl")])
    with ResponseCache() as cache, Ledger.beside(cache.path) as ledger:
        assert len(cache) == 3 and [s.state for s in ledger.slots()] == ["exported"]
    with BatchExecutor({"prices": PRICES}, mode="export", export_dir=str(out_dir), progress=False) as ex:
        assert [o.text for o in ex.run(calls(server.base_url, 3))] == ["echo: q0", "echo: q1", "echo: q2"]
        assert ex.usage.requests_sent == 0
    with ResponseCache() as cache, Ledger.beside(cache.path) as ledger:
        assert [(s.state, s.note, s.completed) for s in ledger.slots()] == [("done", SETTLED, 3)]
