"""Differential: upstream LongMemEval-V2's own run_eval.py + harness.py against Mnemetric running upstream's baseline
memories (mnemetric.longmemeval_v2.upstream_memory), request for request, on the bundled sample (data/sample-v2).

Opt in with MNEMETRIC_LONGMEMEVAL_V2_DIR=<a checkout of xiaowu0162/LongMemEval-V2 at be15ea6>; skipped otherwise.
Every model and embedding call goes to the loopback OpenAI server (tests/support/openai_server.py), never the
internet (HF_HUB_OFFLINE=1). Upstream side: evaluation/run_eval.py's main, in process, with these stand-ins only:

* memory_modules is loaded by our loader first (the backends the method does not import are placeholders, so the
  openai-agents package that memory.py's tail needs for agentrunbook_c_v2 is not required);
* harness.count_memory_context_tokens (the Qwen/Qwen3.5-9B processor, a download) is replaced by our o200k
  stand-in counter, which our run uses too — the budget search itself stays upstream's;
* the embedding model is a local byte-level tokenizer folder (AutoTokenizer needs one; upstream's default
  Qwen/Qwen3-Embedding-8B would be downloaded): both sides name the same folder;
* codex and agentrunbook_c run the Codex CLI (`codex exec`, an agent that calls OpenAI's Responses API itself):
  both sides name the same stand-in binary (tests/support/standin_codex.py), which writes a memory output that
  digests its command line and sandbox (question.json, INSTRUCTION.md, the helper scripts, the workspace index,
  agentrunbook_c's rendered trajectory summaries) and names two trajectory spans. Compared is everything upstream's
  code does around the CLI — the workspace and sandbox it builds, the command, the span expansion, the reader's
  and judge's requests — not the Codex agent's own model calls.

Methods no_retrieval, rag_query_to_slice, rag_query_to_slice_notes, agentrunbook_r (its controller writes events,
notes and query bundles at insert and query time, the loopback server answering each in the shape upstream parses),
codex and agentrunbook_c (the stand-in CLI). agentrunbook_c_v2's run is skipped (NOT_OFFLINE: its runner needs the
openai-agents package and the Responses API over a websocket; docs/v2-upstream-baselines.md); its config, which
upstream ships no file for, is compared with the one run_eval.py builds. Compared per (method, tier, domain): every
request body (reader, judge, the memory's controller and embeddings) as a multiset of canonical JSON — the memory's
as its clients sent them to our loopback model proxy (rag and agentrunbook_r: mnemetric.execute.access
UsesModelProxy), the proxy having forwarded each distinct one once through the run's executor, and the embeddings
requests our server got: in order, each the door's request with just its texts not yet cached — where that is
all of them, upstream's request byte for byte (``encoding_format`` base64, the SDK's default, included); each
question's memory_context and score;
the domain's overall accuracy; the run folder's runtime_inputs/memory_config.json against the one run_eval.py
writes, byte for byte.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

from mnemetric.llm.client import LLMClient
from mnemetric.longmemeval_v2 import upstream_memory as um
from mnemetric.longmemeval_v2.pipeline import build_component, named_settings, option, run_from_settings
from mnemetric.longmemeval_v2.run import write_run
from tests.conftest import ROOT
from tests.support.openai_server import FakeOpenAIServer

SAMPLE = ROOT / "data" / "sample-v2"
RUN_EVAL_SHA256 = "95d43fa67826eb6422ac18255ecad4110715472fe28c4d5ace7e6f1cc8179d43"
HARNESS_SHA256 = "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1"
REPLY = '{"label": 1, "reason": "r"} \\boxed{Meadow Post}'
NOTES = {"procedure_note": {"title": "Find a post", "description": "forum search", "content": "- open search"},
         "hint_note": {"title": "Search quirk", "description": "filters reset", "content": "- re-apply filters"}}
QUERIES = {"raw_state_queries": ["forum search", "post title", "forum search"], "event_query": "open the forum",
           "note_query": "find a post"}
EVENT = {"overview": "The agent looks for a forum post.", "state_transition": "The search page opened."}
METHODS = ("no_retrieval", "rag_query_to_slice", "rag_query_to_slice_notes", "agentrunbook_r", "codex",
           "agentrunbook_c")
NOT_OFFLINE = {"agentrunbook_c_v2": (
    "agentrunbook_c_v2 cannot run offline: its query-time agent is the OpenAI Agents SDK (the openai-agents package, "
    "which memory_modules/oai_agents_sdk.py imports at load) speaking OpenAI's Responses API over a websocket "
    "(OpenAISDKRunner refuses responses_transport other than 'websocket'), which the loopback OpenAI server does "
    "not serve; its config is compared with run_eval's in test_agentrunbook_c_v2_config_is_the_one_run_eval_builds")}
CASES = [(m, t, d) for m in METHODS for t in ("small", "medium") for d in ("web", "enterprise")]
CASES += [pytest.param(m, t, d, marks=pytest.mark.skip(reason=why)) for m, why in NOT_OFFLINE.items()
          for t in ("small", "medium") for d in ("web", "enterprise")]
EMBEDDINGS = "/v1/embeddings"
CODEX_PARAMS = {"codex": "codex_params", "agentrunbook_c": "query_codex_params"}
"""The methods that run the Codex CLI → the params block naming its binary (the stand-in here)."""


def reply(messages) -> str:
    """The reader's and judge's reply; the controller's requests get what their parser reads: a note-writing
    request (rag_query_to_slice_notes, agentrunbook_r) two notes, agentrunbook_r's event request an event, its
    query-writing request a query bundle (a repeated query, which upstream drops)."""
    text = json.dumps(messages)
    if "procedure_note" in text and "hint_note" in text:
        return json.dumps(NOTES)
    if "raw_state_queries" in text:
        return json.dumps(QUERIES)
    if "state_transition" in text and "overview" in text:
        return json.dumps(EVENT)
    return REPLY


@pytest.fixture(scope="module")
def checkout() -> Path:
    root = os.environ.get(um.ENV)
    if not root:
        pytest.skip(f"set {um.ENV} to a LongMemEval-V2 checkout at be15ea6 to compare upstream's baselines")
    root = Path(root).resolve()
    for rel, pin in (("evaluation/run_eval.py", RUN_EVAL_SHA256), ("evaluation/harness.py", HARNESS_SHA256)):
        assert hashlib.sha256((root / rel).read_bytes()).hexdigest() == pin, f"{rel} is not the file at be15ea6"
    return root


@pytest.fixture(scope="module")
def embedding_tokenizer(tmp_path_factory) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok = Tokenizer(models.BPE({c: i for i, c in enumerate(sorted(alphabet))}, []))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    folder = tmp_path_factory.mktemp("embedding-tokenizer")
    PreTrainedTokenizerFast(tokenizer_object=tok).save_pretrained(str(folder))
    return str(folder)


@pytest.fixture(scope="module")
def codex_binary(tmp_path_factory) -> str:
    """An executable running tests/support/standin_codex.py with this interpreter (the Codex CLI's stand-in)."""
    path = tmp_path_factory.mktemp("codex") / "codex"
    path.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests' / 'support' / 'standin_codex.py'} \"$@\"\n")
    path.chmod(0o755)
    return str(path)


def _bodies(server: FakeOpenAIServer) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for r in server.requests:
        out.setdefault(r.path, Counter())[json.dumps(r.body, sort_keys=True)] += 1
    return out


@pytest.fixture
def at_the_proxy(monkeypatch) -> dict[str, list[str]]:
    """The requests upstream's memory clients made to our model proxy (path under /v1 → canonical bodies in arrival
    order): what upstream's clients sent to the server in upstream's own run."""
    from mnemetric.llm.proxy import ModelProxy

    seen: dict[str, list[str]] = {}
    handle = ModelProxy.handle

    def recording(self, path, body):
        seen.setdefault(self.split(path)[1], []).append(json.dumps(body, sort_keys=True))
        return handle(self, path, body)

    monkeypatch.setattr(ModelProxy, "handle", recording)
    return seen


def _wire(server: FakeOpenAIServer, path: str) -> list[bytes]:
    """The bodies of ``path``'s requests as they arrived at ``server`` (bytes), in order."""
    return [r.raw for r in server.requests if r.path == path]


def _forwarded_embeddings(door: list[str]) -> list[tuple[dict, int | None]]:
    """What the run's executor sends for the embeddings requests that reached the proxy's door (in order): per
    request, the texts the response cache does not hold yet, each once, in the request's order and format, at most
    the client's batch size per request; with the door request's index when it went on whole (nothing left out)."""
    size = inspect.signature(LLMClient).parameters["embed_batch_size"].default
    sent: set[str] = set()
    out: list[tuple[dict, int | None]] = []
    for n, text in enumerate(door):
        body = json.loads(text)
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        new = [t for t in dict.fromkeys(texts) if t not in sent]
        sent.update(new)
        for i in range(0, len(new), size):
            chunk = new[i : i + size]
            out.append(({**body, "input": chunk, "encoding_format": body.get("encoding_format") or "float"},
                        n if chunk == body["input"] else None))
    return out


def _same_requests(theirs: dict[str, Counter], server: dict[str, Counter], proxy: dict[str, list[str]],
                   theirs_server: FakeOpenAIServer, our_server: FakeOpenAIServer) -> int:
    """Request for request: what upstream's memory clients asked (at our proxy) and what our reader and judge sent
    (at our server) are what upstream sent its server. What the proxy forwarded through the run's executor is each
    distinct request once (the response cache answers a repeat). An embeddings request goes on in the library's own
    shape and format (``encoding_format`` base64, the SDK's default), its texts one per cache row, repeats and
    cached texts left out: where nothing was left out, our server got upstream's request byte for byte.
    Returns how many embeddings requests were compared byte for byte."""
    assert sorted(set(server) | set(proxy)) == sorted(theirs)
    door_embeddings = proxy.get(EMBEDDINGS, [])
    theirs_wire = _wire(theirs_server, EMBEDDINGS)
    assert door_embeddings == [json.dumps(json.loads(b), sort_keys=True) for b in theirs_wire]  # order included
    expected = _forwarded_embeddings(door_embeddings)
    ours_wire = _wire(our_server, EMBEDDINGS)
    assert [json.loads(b) for b in ours_wire] == [body for body, _ in expected]
    verbatim = 0
    for mine, (body, whole) in zip(ours_wire, expected):
        if whole is not None:  # the executor sent the library's request as it was: upstream's bytes
            assert mine == theirs_wire[whole], body
            verbatim += 1
    assert all(json.loads(b).get("encoding_format") == "base64" for b in [*ours_wire, *theirs_wire])
    door_chat = Counter(proxy.get("/v1/chat/completions", []))
    server_chat = server.get("/v1/chat/completions", Counter())
    forwarded = Counter(set(door_chat))
    assert all(server_chat[b] >= 1 for b in forwarded)  # forwarded as the memory's client sent it
    assert (server_chat - forwarded) + door_chat == theirs["/v1/chat/completions"]
    return verbatim


def _same_items(items) -> list[tuple[str, str]]:
    """Items with an image copied into a memory workspace named by its path inside the workspace (each side's
    workspace is its own folder) and its bytes."""
    out = []
    for i in items:
        value = i["value"]
        if i["type"] == "image" and "/trajectories/" in value:
            digest = hashlib.sha256(Path(value).read_bytes()).hexdigest()
            value = f"<workspace>/trajectories/{value.split('/trajectories/', 1)[1]} {digest}"
        out.append((i["type"], value))
    return out


def _counter():
    return build_component(option("token_counter", "o200k", SAMPLE), "v2.token_counter")


def _run_eval(checkout: Path, monkeypatch, memory_type: str = "no_retrieval"):
    """Upstream's evaluation/run_eval.py as a module (memory_modules loaded by our loader for ``memory_type``)."""
    um.load_package(checkout, memory_type)
    monkeypatch.syspath_prepend(str(checkout))
    for name in [n for n in sys.modules if n == "evaluation" or n.startswith(("evaluation.", "data."))]:
        monkeypatch.delitem(sys.modules, name)
    spec = importlib.util.spec_from_file_location("_upstream_run_eval", checkout / "evaluation" / "run_eval.py")
    run_eval = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_eval)
    return run_eval


def run_upstream(checkout: Path, method: str, tier: str, domain: str, out: Path, server: FakeOpenAIServer,
                 tokenizer: str, codex: str, monkeypatch) -> tuple[list[dict], dict]:
    run_eval = _run_eval(checkout, monkeypatch, um.method_config(checkout, method)["memory_type"])
    harness = __import__("evaluation.harness", fromlist=["main"])
    counter = _counter()
    monkeypatch.setattr(harness, "count_memory_context_tokens", lambda items, _images: counter.count(items))
    monkeypatch.setattr(sys, "argv", [
        "run_eval.py", "--data-root", str(SAMPLE), "--domain", domain, "--tier", tier, "--method", method,
        "--output-dir", str(out), "--reader-base-url", server.base_url, "--embedding-model", tokenizer,
        "--embedding-base-url", server.base_url, "--controller-base-url", server.base_url, "--codex-binary", codex])
    run_eval.main()
    rows = [json.loads(line) for line in (out / "per_question.jsonl").read_text(encoding="utf-8").splitlines()]
    return rows, json.loads((out / "aggregated_metrics.json").read_text(encoding="utf-8"))


def run_ours(method: str, tier: str, domain: str, server: FakeOpenAIServer, tokenizer: str, codex: str):
    from mnemetric.execute import build_executor

    if method in CODEX_PARAMS:
        params = {CODEX_PARAMS[method]: {"binary": codex}}
    elif method == "no_retrieval":
        params = {}
    else:
        params = {"embedding_params": {"model": tokenizer, "base_url": server.base_url},
                  "controller_params": {"base_url": server.base_url}}
    settings = named_settings(SAMPLE, tier, memory=f"upstream-{method}", memory_options={"params": params},
                              domains=[domain], reader="openai", checker="llm", token_counter="o200k")
    return run_from_settings(settings, build_executor(None, {"max_concurrency": 4})), settings


@pytest.mark.parametrize(("method", "tier", "domain"), CASES)
def test_upstream_baseline_equals_upstreams_harness(checkout, embedding_tokenizer, codex_binary, tmp_path, monkeypatch,
                                                    at_the_proxy, method, tier, domain):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer(reply=reply) as theirs_server:
        monkeypatch.setenv("OPENAI_BASE_URL", theirs_server.base_url)  # the judge: run_eval passes no base URL
        up_rows, up_agg = run_upstream(checkout, method, tier, domain, tmp_path / "upstream", theirs_server,
                                       embedding_tokenizer, codex_binary, monkeypatch)
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAIServer(reply=reply) as our_server:
        monkeypatch.setenv("OPENAI_BASE_URL", our_server.base_url)
        ours, settings = run_ours(method, tier, domain, our_server, embedding_tokenizer, codex_binary)
    theirs, mine = _bodies(theirs_server), _bodies(our_server)
    verbatim = _same_requests(theirs, mine, at_the_proxy, theirs_server, our_server)
    if method.startswith("rag") or method == "agentrunbook_r":  # its clients talked to our model proxy
        assert at_the_proxy[EMBEDDINGS] and verbatim >= 1
    else:
        assert not at_the_proxy
    n = sum(sum(c.values()) for c in theirs.values())
    assert n >= len(up_rows)  # at least one reader request per question
    if method.startswith("rag") or method == "agentrunbook_r":
        assert "/v1/embeddings" in theirs
    if method == "rag_query_to_slice_notes":  # the controller wrote notes at insert time
        assert sum(theirs["/v1/chat/completions"].values()) > len(up_rows) + 2
    if method == "agentrunbook_r":  # the controller's replies were parsed, not replaced by upstream's fallbacks
        embedded = "".join(theirs["/v1/embeddings"])
        assert all(text in embedded for text in ("post title", EVENT["state_transition"], NOTES["hint_note"]["title"]))
    if method in CODEX_PARAMS:  # every query's stand-in Codex run succeeded, its spans expanded with screenshots
        assert all(r["memory_context"][0]["value"].startswith("# Stand-in Codex") for r in up_rows)
        assert all(any(i["type"] == "image" for i in r["memory_context"]) for r in up_rows)
    by_id = {r.question_id: r for r in ours.rows[domain]}
    assert [r["question_id"] for r in up_rows] == list(by_id)
    for row in up_rows:
        mine_row = by_id[row["question_id"]]
        assert _same_items(mine_row.memory_context) == _same_items(row["memory_context"]), row["question_id"]
        assert mine_row.score == row["score"], row["question_id"]
    assert ours.aggregated[domain].to_record()["overall"] == up_agg["overall"]
    write_run(tmp_path / "ours", ours, settings)  # runtime_inputs/memory_config.json: run_eval's, byte for byte
    config = "runtime_inputs/memory_config.json"  # (each side's loopback server named alike)
    mine_text = (tmp_path / "ours" / domain / config).read_text().replace(our_server.base_url, "<server>")
    theirs_text = (tmp_path / "upstream" / config).read_text().replace(theirs_server.base_url, "<server>")
    assert json.loads(mine_text) == json.loads(theirs_text)
    assert mine_text == theirs_text
    assert ours.summary.to_record()["settings"]["memory_query_context"] == "upstream-question-row"
    assert any("upstream's query context" in r for r in ours.summary.to_record()["official_equivalence"]["reasons"])
    print(f"\n{method} {tier} {domain}: {n} requests equal "
          f"({', '.join(f'{p} {sum(c.values())}' for p, c in sorted(theirs.items()))}); "
          f"overall_full_set {up_agg['overall']['overall_full_set']}; "
          f"embeddings {len(at_the_proxy.get(EMBEDDINGS, []))} at the proxy, {len(_wire(our_server, EMBEDDINGS))} sent, {verbatim} byte for byte upstream's")


def test_agentrunbook_c_v2_config_is_the_one_run_eval_builds(checkout, tmp_path, monkeypatch):
    """Upstream ships no memory_configs/agentrunbook_c_v2.json: the shipped option's config (what
    runtime_inputs/memory_config.json holds) must be run_eval.py build_memory_config's with its argument defaults,
    key order included; the memory itself cannot run offline (NOT_OFFLINE)."""
    from mnemetric.config import compose

    for var in [v for v in os.environ if v.startswith(("OPENAI_SDK_", "CODEX_"))]:  # run_eval's overrides
        monkeypatch.delenv(var)
    run_eval = _run_eval(checkout, monkeypatch)
    monkeypatch.setattr(sys, "argv", ["run_eval.py", "--data-root", str(SAMPLE), "--domain", "web",
                                      "--method", "agentrunbook_c_v2", "--output-dir", str(tmp_path / "out")])
    theirs = run_eval.build_memory_config(run_eval.parse_args(), SAMPLE)
    section = dict(compose(["v2/memory=upstream-agentrunbook_c_v2"])["v2"]["memory"]) | {"root": str(SAMPLE)}
    mine = um.runtime_memory_config(section)
    assert json.dumps(mine, indent=2) == json.dumps(theirs, indent=2)
    assert um.fingerprint_files(section)["upstream:evaluation/run_eval.py"] == RUN_EVAL_SHA256
