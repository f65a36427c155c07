"""The upstream-memory adapter (mnemetric.longmemeval_v2.upstream_memory) on a stand-in checkout written here.

The stand-in is our own code with upstream's interface (a registry, build/save/load, thread-local query context),
its files accepted by patching the adapter's pins to their hashes; the real checkout is compared in
tests/parity/test_v2_upstream_memory.py. Checked: the errors (no checkout, wrong revision, missing package), the
constructor arguments and runtime parameters, raw trajectory dicts, the query context row, save/load, the
fingerprint, and the run's mark (settings.memory_query_context and the gate's reason).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from mnemetric.errors import ConfigError
from mnemetric.fingerprint import fingerprint
from mnemetric.longmemeval_v2 import upstream_checkout as uc
from mnemetric.longmemeval_v2 import upstream_memory as um
from mnemetric.longmemeval_v2.pipeline import run_named
from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample-v2"
TARGET = "mnemetric.longmemeval_v2.upstream_memory.UpstreamMemory"

MEMORY_PY = '''import json
import threading
from pathlib import Path


class Memory:
    memory_type = ""

    def __init__(self, memory_params):
        self.memory_params = dict(memory_params)
        self._local = threading.local()

    def configure_runtime(self, **kwargs):
        return None

    def post_query_hook(self, *, query, query_image, memory_context):
        return None

    def set_query_context(self, **kwargs):
        self._local.context = dict(kwargs)

    def clear_query_context(self):
        self._local.__dict__.pop("context", None)

    def get_query_context(self):
        return dict(getattr(self._local, "context", {}))


MEMORY_TYPES = {}


def register_memory(cls):
    MEMORY_TYPES[cls.memory_type] = cls
    return cls


def build_memory(config):
    return MEMORY_TYPES[config["memory_type"]](config["memory_params"])


def save_memory(memory, output_dir):
    Path(output_dir).mkdir(parents=True)
    (Path(output_dir) / "state.json").write_text(json.dumps(memory.inserted))


def load_memory(input_dir, requested_config=None):
    memory = build_memory(requested_config)
    memory.inserted = json.loads((Path(input_dir) / "state.json").read_text())
    return memory


from .rag import Recorder  # noqa: E402
from .codex import NeedsPackage  # noqa: E402
'''
RAG_PY = '''from pathlib import Path

from .memory import Memory, register_memory


@register_memory
class Recorder(Memory):
    memory_type = "rag"

    def __init__(self, memory_params):
        super().__init__(memory_params)
        model = (memory_params.get("embedding_params") or {}).get("model")
        if model and not Path(model).is_dir():  # as transformers' AutoTokenizer.from_pretrained offline
            raise OSError(f"We couldn't connect to 'https://huggingface.co' to load the files of {model}")
        if memory_params.get("broken"):
            raise OSError(28, "No space left on device")
        self.inserted, self.runtime, self.contexts = [], None, []

    def configure_runtime(self, **kwargs):
        self.runtime = dict(kwargs)

    def insert(self, trajectory):
        self.inserted.append(trajectory)

    def query(self, query, query_image=None):
        context = self.get_query_context()
        self.contexts.append(context)
        return [{"type": "text", "value": "saw " + ",".join(sorted(context)) + " of " + str(len(self.inserted))}]
'''
CODEX_PY = '''import no_such_package_for_mnemetric_tests
from .memory import Memory, register_memory


@register_memory
class NeedsPackage(Memory):
    memory_type = "codex"
'''
CONFIGS = {"rec": {"memory_type": "rag", "memory_params": {"a": 1, "nested": {"x": 1, "y": 2},
                                                           "questions_path": "SET_BY_SCRIPT"}},
           "needs": {"memory_type": "codex", "memory_params": {}}}


@pytest.fixture
def standin(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "LongMemEval-V2"
    files = {"memory_modules/__init__.py": '"""stand-in"""\n', "memory_modules/memory.py": MEMORY_PY,
             "memory_modules/rag.py": RAG_PY, "memory_modules/codex.py": CODEX_PY}
    files |= {um.config_file(k): json.dumps(v) for k, v in CONFIGS.items()}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    pins = {rel: hashlib.sha256(t.encode()).hexdigest() for rel, t in files.items()}
    monkeypatch.setattr(uc, "PINS", pins)  # read there (upstream_checkout.verified); um re-exports the same dict
    monkeypatch.setattr(um, "PINS", pins)
    monkeypatch.setenv(um.ENV, str(root))
    monkeypatch.chdir(tmp_path)
    yield root
    for name in [n for n in sys.modules if n == um.PACKAGE or n.startswith(um.PACKAGE + ".")]:
        del sys.modules[name]
    um._LOADED.clear()


def test_no_checkout_names_the_variable_the_conf_key_and_the_revision(tmp_path, monkeypatch):
    monkeypatch.delenv(um.ENV, raising=False)
    with pytest.raises(ConfigError) as err:
        um.UpstreamMemory("no_retrieval", SAMPLE)
    assert um.ENV in str(err.value) and "v2.memory.checkout" in str(err.value) and um.REVISION[:7] in str(err.value)
    with pytest.raises(ConfigError, match="is not a LongMemEval-V2 checkout"):
        um.UpstreamMemory("no_retrieval", SAMPLE, checkout=str(tmp_path))


def test_a_checkout_at_another_revision_is_refused_naming_the_file(standin, monkeypatch):
    monkeypatch.setitem(um.PINS, "memory_modules/rag.py", "0" * 64)
    with pytest.raises(ConfigError) as err:
        um.UpstreamMemory("rec", SAMPLE)
    assert "memory_modules/rag.py" in str(err.value) and um.REVISION in str(err.value)


def test_a_missing_package_is_named(standin):
    with pytest.raises(ConfigError, match="no_such_package_for_mnemetric_tests") as err:
        um.UpstreamMemory("needs", SAMPLE)
    assert "pip install no_such_package_for_mnemetric_tests" in str(err.value)


def test_a_method_without_a_config_file_gets_run_evals_config_with_run_eval_verified(standin, monkeypatch):
    """agentrunbook_c_v2: no memory_configs JSON upstream; its config is BUILT_BY_RUN_EVAL (compared with run_eval's
    own build_memory_config in tests/parity), given only when run_eval.py is the pinned file, never shared."""
    run_eval = standin / um.RUN_EVAL
    run_eval.write_text("# stand-in\n", encoding="utf-8")
    monkeypatch.setitem(um.PINS, um.RUN_EVAL, hashlib.sha256(b"# stand-in\n").hexdigest())
    config = um.method_config(standin, "agentrunbook_c_v2")
    assert config == um.BUILT_BY_RUN_EVAL["agentrunbook_c_v2"] and um.config_file("agentrunbook_c_v2") == um.RUN_EVAL
    config["memory_params"]["query_openai_sdk_params"]["model"] = "changed"
    assert um.BUILT_BY_RUN_EVAL["agentrunbook_c_v2"]["memory_params"]["query_openai_sdk_params"]["model"] != "changed"
    template = um.memory_template(standin, "agentrunbook_c_v2", {"evidence_mode": "axtree"}, SAMPLE)
    assert template["memory_params"]["questions_path"] == str((SAMPLE / "questions.jsonl").resolve())
    assert template["memory_params"]["evidence_mode"] == "axtree"
    run_eval.write_text("# another revision\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=um.RUN_EVAL):
        um.method_config(standin, "agentrunbook_c_v2")
    with pytest.raises(ConfigError, match="(?s)no upstream config for method 'nope'.*agentrunbook_c_v2"):
        um.method_config(standin, "nope")


def test_built_as_upstream_builds_it_raw_rows_and_the_question_row(standin, tmp_path):
    m = um.UpstreamMemory("rec", SAMPLE, params={"nested": {"y": 3}}, workspace=tmp_path / "ws",
                          reader_temperature=0.1, reader_top_p=0.2)
    params = m.memory.memory_params
    assert (params["a"], params["nested"]) == (1, {"x": 1, "y": 3})  # upstream's config, deep-merged
    assert params["questions_path"] == str((SAMPLE / "questions.jsonl").resolve())
    assert params["trajectories_root_dir"] == str(SAMPLE.resolve())
    assert Path(params["workspace_dir"]).parent.parent == (tmp_path / "ws").resolve()
    assert "query_trace_dir" not in params  # rag gets no trace folder (only codex and agentrunbook_c*)
    assert (m.memory.runtime["generation_temperature"], m.memory.runtime["generation_top_p"]) == (0.1, 0.2)
    assert set(m.memory.runtime) == {"query_trace_dir", "generation_temperature", "generation_top_p", "cancel_event"}
    rows = [json.loads(line) for line in (SAMPLE / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()]
    m.insert(rows[0]["id"])
    assert m.memory.inserted == [rows[0]]  # the raw dict, not our typed record
    questions = [json.loads(line) for line in (SAMPLE / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    with_image = next(q for q in questions if q["image"])
    m.before_query(with_image["id"])
    assert m.query("text") == [{"type": "text", "value": "saw question_id,question_item,question_type of 1"}]
    item = m.memory.contexts[-1]["question_item"]
    assert item["answer"] == with_image["answer"] and "image" not in item  # the whole row: it leaks
    assert item["question"] == {"text": with_image["question"], "image": str((SAMPLE / with_image["image"]).resolve())}
    m.after_query()
    assert m.memory.get_query_context() == {}
    quiet = um.UpstreamMemory("rec", SAMPLE, query_context="none", workspace=tmp_path / "ws")
    quiet.before_query(with_image["id"])
    assert quiet.query("text")[0]["value"] == "saw  of 0"


def test_an_embedding_model_not_at_hand_names_its_key_and_how_to_get_it(standin, tmp_path):
    """rag and agentrunbook_r load their embedding model's tokenizer when built (transformers, Hugging Face cache or
    hub): the OSError it raises offline names v2.memory.params.embedding_params.model and the download, not the
    option's constructor keys; another OSError is the memory's own build failure."""
    from mnemetric.config import build
    from mnemetric.errors import PluginError

    model = str(tmp_path / "no-such-tokenizer")
    section = {"_target_": TARGET, "name": "upstream-rec", "method": "rec", "root": str(SAMPLE),
               "workspace": str(tmp_path / "ws"), "params": {"embedding_params": {"model": model}}}
    with pytest.raises(ConfigError) as err:
        build(section, "v2.memory")
    text = str(err.value)
    assert text.startswith("v2.memory.params.embedding_params.model: upstream-rec could not be built: OSError: ")
    assert f"hf download {model} --exclude '*.safetensors'" in text
    assert "-S v2.memory.params.embedding_params.model=<a local folder" in text
    assert "constructor arguments" not in text
    (tmp_path / "no-such-tokenizer").mkdir()
    assert build(section, "v2.memory").memory.memory_params["embedding_params"] == {"model": model}
    with pytest.raises(PluginError, match=r"upstream-rec: build: OSError: \[Errno 28\] No space left on device"):
        um.UpstreamMemory("rec", SAMPLE, params={"broken": True}, workspace=tmp_path / "ws")


def test_save_then_load_skips_the_inserts(standin, tmp_path):
    rows = [json.loads(line) for line in (SAMPLE / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()]
    saved = um.UpstreamMemory("rec", SAMPLE, save_dir=tmp_path / "state")
    saved.insert(rows[0]["id"])
    saved.inserts_done()
    with pytest.raises(ConfigError, match="never overwrites"):
        saved.inserts_done()
    loaded = um.UpstreamMemory("rec", SAMPLE, load_dir=str(tmp_path / "state"))
    loaded.insert(rows[1]["id"])  # skipped, as upstream's harness does when it loads
    assert loaded.memory.inserted == [rows[0]]


def test_the_fingerprint_covers_the_upstream_files_the_method_uses(standin):
    section = {"_target_": TARGET, "name": "upstream-rec", "method": "rec", "root": str(SAMPLE)}
    fp = fingerprint(TARGET, section=section)
    upstream = {k for k in fp.files if k.startswith("upstream:")}
    assert upstream == {"upstream:" + p for p in ("memory_modules/__init__.py", "memory_modules/memory.py",
                                                  "memory_modules/rag.py", um.config_file("rec"))}
    assert fp.files["upstream:memory_modules/rag.py"] == um.PINS["memory_modules/rag.py"]
    assert not any(k.startswith("upstream:") for k in fingerprint(TARGET).files)  # no section: code only


@pytest.mark.parametrize(("query_context", "marked"), [("upstream", True), ("none", False)])
def test_a_run_with_upstreams_query_context_is_marked_and_never_official(standin, tmp_path, query_context, marked):
    conf = tmp_path / "conf"
    (conf / "v2" / "memory").mkdir(parents=True)
    (conf / "v2" / "memory" / "upstream-rec.yaml").write_text(
        f"_target_: {TARGET}\nname: upstream-rec\nmethod: rec\nroot: ${{v2.data_root}}\nquery_context: "
        f"{query_context}\nworkspace: {tmp_path / 'ws'}\n", encoding="utf-8")
    run = run_named(SAMPLE, "small", memory="upstream-rec", domains=["web"], token_counter="o200k", conf=conf)
    rows = run.rows["web"]
    seen = "question_id,question_item,question_type" if marked else ""
    assert {r.memory_context[0]["value"] for r in rows} == {f"saw {seen} of 6"}  # one shared memory, 6 inserted
    assert run.summary.settings["memory_query_context"] == ("upstream-question-row" if marked else "question")
    reasons = run.summary.to_record()["official_equivalence"]["reasons"]
    assert any("upstream's query context" in r for r in reasons) is marked


def test_runtime_inputs_memory_config_is_upstreams_shape_not_our_options_keys(standin, tmp_path):
    """runtime_inputs/memory_config.json of an upstream option: the memory type and the params it is built from
    (run_eval.py build_memory_config), none of our option's keys; our own memories keep {name, own keys}."""
    from mnemetric.longmemeval_v2.run_folder import memory_config

    section = {"_target_": TARGET, "name": "upstream-rec", "method": "rec", "root": str(SAMPLE),
               "params": {"nested": {"y": 3}}, "checkout": None, "query_context": "upstream", "workspace": None,
               "reader_temperature": 0.6, "reader_top_p": 0.95, "save_dir": None, "load_dir": None}
    want = {"memory_type": "rag", "memory_params": {"a": 1, "nested": {"x": 1, "y": 3},
                                                    "questions_path": str((SAMPLE / "questions.jsonl").resolve())}}
    assert memory_config(section) == want
    built = um.UpstreamMemory("rec", SAMPLE, params={"nested": {"y": 3}}, workspace=tmp_path / "ws")
    runtime = {k: v for k, v in built.memory.memory_params.items() if k not in ("workspace_dir", "trajectories_root_dir")}
    assert runtime == want["memory_params"]  # the file says what the memory was built with (before runtime params)
    ours = {"_target_": "mnemetric.longmemeval_v2.baselines.bm25_states", "name": "bm25", "top_k": 10}
    assert memory_config(ours) == {"memory_type": "bm25", "memory_params": {"top_k": 10}}
    with pytest.raises(ConfigError, match="v2.memory.method"):
        memory_config({**section, "method": None})
