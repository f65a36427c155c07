"""A LongMemEval-V2 run from its settings (the ``v2`` conf option): the library side of stage ``v2``.

Every component is a conf option built by Hydra's ``_target_`` (conf/v2/memory, reader, checker,
token_counter; no dispatch by name): an option with ``_partial_: true`` needs the LLM client and is
completed with ``connect`` — a factory ``(base_url, role) → LLMClient`` made from the run's ``llm:``
settings (the one client: cache, budget, retries) — so the offline options never open a client. The
memory option is built afresh whenever the shared-haystack rule asks for a new memory (:mod:`.memory`).
The offline reader and checker need no model and no network (the bundled sample's default); the reader
and LLM checkers read the pinned upstream texts at run time (MNEMETRIC_LONGMEMEVAL_V2_DIR, else the
cache, else a download). The CLI names options (``--memory bm25``) and gets the same conf files
(:func:`option`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError
from mnemetric.longmemeval_v2.family import FAMILY
from mnemetric.longmemeval_v2.memory import MemoryFactory
from mnemetric.longmemeval_v2.run import V2Run, run_v2

GROUPS = ("memory", "reader", "checker", "token_counter")
"""The component sub-groups of the ``v2`` option (conf/v2/<group>/<option>.yaml)."""


def connect_with(llm: Mapping[str, Any]) -> Callable[[str | None, str], Any]:
    """The run's client factory: ``(base_url, role)`` → an LLMClient with the ``llm:`` settings."""
    def connect(base_url: str | None, role: str):
        from mnemetric.llm.settings import client_from_params

        return client_from_params(llm, base_url, role=role)
    return connect


def _section(s: Mapping[str, Any], group: str) -> dict[str, Any]:
    cfg = s.get(group)
    if not isinstance(cfg, dict):
        options = ", ".join(sorted(p.stem for p in (conf_dir() / group).glob("*.yaml")))
        raise ConfigError(f"v2.{group}", f"expected a component (a mapping with _target_), got {cfg!r}",
                          fix=f"choose an option with -S v2/{group}=<option> (options: {options}); "
                              f"set its keys with -S v2.{group}.<key>=<value>")
    return dict(cfg)


def build_component(cfg: Mapping[str, Any], where: str, connect: Callable[[str | None, str], Any]) -> Any:
    """Build one option; a ``_partial_`` one is then called with ``connect=`` (module docstring)."""
    from mnemetric.config import build

    made = build(dict(cfg), where)
    return made(connect=connect) if cfg.get("_partial_") else made


@dataclass(frozen=True)
class Components:
    """What one V2 run is made of, built from the ``v2`` settings."""

    factory: MemoryFactory
    memory_name: str
    reader: Any
    checker: Any
    counter: Any


def components(s: Mapping[str, Any], llm: Mapping[str, Any]) -> Components:
    """Build the memory factory, reader, checker and token counter the ``v2`` settings name."""
    from mnemetric.config import build

    memory = _section(s, "memory")
    build(memory, "v2.memory")  # fail early (an unimportable target, a bad key), before any data is read
    connect = connect_with(llm)
    return Components(lambda: build(memory, "v2.memory"), str(memory["name"]),
                      build_component(_section(s, "reader"), "v2.reader", connect),
                      build_component(_section(s, "checker"), "v2.checker", connect),
                      build_component(_section(s, "token_counter"), "v2.token_counter", connect))


def run_from_settings(s: Mapping[str, Any], llm: Mapping[str, Any], *, data_verified: bool = False) -> V2Run:
    """One V2 evaluation as the ``v2`` settings say (see conf/v2/sample.yaml for the keys);
    ``data_verified``: the data root's custody record verifies every file against the dataset pins.
    The run's ``provenance`` is :func:`component_facts` of the components it was made with."""
    c = components(s, llm)
    run = run_v2(Path(s["data_root"]), s["haystack"], tuple(dict.fromkeys(s["domains"])), factory=c.factory,
                 memory_name=c.memory_name, reader=c.reader, checker=c.checker, counter=c.counter,
                 max_tokens=int(s["max_tokens"]), texts=c.reader.texts, check_images=bool(s["images"]),
                 data_verified=data_verified, counter_note=c.counter.note)
    return replace(run, provenance=component_facts(c))


def conf_dir() -> Path:
    """conf/v2 of the package (the options the CLI names)."""
    from mnemetric.config import package_conf_dir

    return package_conf_dir() / "v2"


def option_dirs(group: str, conf: str | Path | None = None) -> list[Path]:
    """Where the options of ``group`` live: ``<conf>/v2/<group>/`` of a project's conf folder (when given),
    then the package's conf/v2/<group>/. A project option shadows a package option of the same name."""
    dirs = [Path(conf) / "v2" / group] if conf is not None else []
    return dirs + [conf_dir() / group]


def options(group: str, conf: str | Path | None = None) -> list[str]:
    """The option names of ``group`` (one per <name>.yaml in :func:`option_dirs`), sorted."""
    return sorted({p.stem for d in option_dirs(group, conf) for p in d.glob("*.yaml")})


def option(group: str, name: str, data_root: str | Path, conf: str | Path | None = None,
           **overrides: Any) -> dict[str, Any]:
    """<conf>/v2/<group>/<name>.yaml (else the package's) as a component section, ``${v2.data_root}`` resolved
    to ``data_root``, and each non-None override set where the option has that key — what the CLI builds when
    it names an option (a user's own option works as a shipped one)."""
    import yaml
    from omegaconf import OmegaConf

    path = next((d / f"{name}.yaml" for d in option_dirs(group, conf) if (d / f"{name}.yaml").is_file()), None)
    if path is None:
        where = " or ".join(str(d) for d in option_dirs(group, conf))
        raise ConfigError(group, f"no LongMemEval-V2 {group} option {name!r} (looked in {where})",
                          fix=f"one of: {', '.join(options(group, conf))}; or add {group}/{name}.yaml under "
                              "<conf>/v2/ and pass --conf")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{group}={name}", f"{path}: not valid YAML ({exc})", fix="fix the file") from None
    if not isinstance(raw, dict) or "_target_" not in raw or "name" not in raw:
        raise ConfigError(f"{group}={name}", f"{path}: expected a mapping with _target_ and name",
                          fix="copy a shipped option (conf/v2/<group>/*.yaml) and change it")
    raw.update({k: v for k, v in overrides.items() if v is not None and k in raw})
    tree = OmegaConf.create({"v2": {"data_root": str(data_root), group: raw}})
    return OmegaConf.to_container(tree, resolve=True)["v2"][group]


MEASURED = "measured on this machine: not a DVC-tracked number (see the run folder and the run log)"


def tracked_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """metrics/v2.json's content: the run summary without what a clock measured.

    Query latency (and the LAFS point it places) is a measurement of this machine, not a pure
    function of the inputs; DVC-tracked files must be (a fresh clone reproduces them byte for byte).
    So latency and LAFS stay in the untracked run folder and the terminal, and the tracked file says
    so; every accuracy, count, token figure and the official verdict stay.
    """
    out = {k: v for k, v in summary.items() if k != "lafs"}
    for name in ("domains", "combined"):
        blocks = out.get(name)
        if isinstance(blocks, dict):
            out[name] = _strip(blocks) if name == "combined" else {d: _strip(b) for d, b in blocks.items()}
    out["latency"] = MEASURED
    out["lafs"] = {"tier": (summary.get("lafs") or {}).get("tier"), "note": MEASURED}
    return out


CATEGORY_SECTIONS = ("non_abstention_by_category", "abstention_by_category", "combined_abstention_by_category",
                     "abstention_overall")


def by_category(aggregated: Mapping[str, Any]) -> dict[str, Any]:
    """upstream's per-category breakdowns (fractions, counts) of an aggregated_metrics dict."""
    return {k: aggregated[k] for k in CATEGORY_SECTIONS if k in aggregated}


def _strip(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if not k.startswith("memory_query")}


MANIFEST_SCHEMA = "mnemetric.longmemeval-v2.run-manifest/1"


def component_facts(c: Components) -> dict[str, Any]:
    """What the built components say about themselves, for metrics/run-v2.json (:func:`v2_manifest`).

    reader: ``sends_prompts`` (it sends the upstream texts) and then the sha256 of the harness.py it read and
    of its extracted texts (``ReaderTexts.texts_sha256``); a reader that sends nothing records null for both,
    so whether the texts are at hand changes nothing. checker: its model and request settings, and for an
    LLM checker the qa_eval_metrics.py sha256 and ``CheckerTexts.texts_sha256``. token counter: name and
    whether it is the official one.
    """
    reader, checker, counter = c.reader, c.checker, c.counter
    sends = bool(getattr(reader, "sends_reader_texts", True))
    rtexts = getattr(reader, "texts", None) if sends else None
    ctexts = getattr(checker, "texts", None)
    return {
        "reader": {"name": reader.name, "model": getattr(reader, "model", None), "sends_prompts": sends,
                   "official": bool(getattr(reader, "official", False)),
                   "harness_sha256": rtexts.source_sha256 if rtexts else None,
                   "texts_sha256": rtexts.texts_sha256 if rtexts else None},
        "checker": {"name": checker.name, "model": getattr(checker, "model", None),
                    "reasoning_effort": getattr(checker, "reasoning_effort", None),
                    "max_completion_tokens": getattr(checker, "max_completion_tokens", None),
                    "official": bool(getattr(checker, "official", False)),
                    "qa_eval_metrics_sha256": ctexts.source_sha256 if ctexts else None,
                    "prompt_set_sha256": ctexts.texts_sha256 if ctexts else None},
        "token_counter": {"name": counter.name, "official": bool(counter.official)},
    }


def dataset_facts(settings: Mapping[str, Any], custody_file: str | None, custody: bytes | None) -> dict[str, Any]:
    """The data's identity: repo and revision (null for the bundled sample), the custody record's path and
    the sha256 of its bytes, and ``files_sha256`` = sha256 of the canonical JSON of the record's
    ``[{"file", "sha256"}]`` list sorted by file (the data root's files as the record lists them)."""
    from mnemetric.io import dumps_canonical, sha256_bytes, sha256_text

    files_sha256 = None
    if custody is not None:
        import json

        files = json.loads(custody).get("files") or []
        listed = sorted(({"file": f.get("file"), "sha256": f.get("sha256")} for f in files),
                        key=lambda f: str(f["file"]))
        files_sha256 = sha256_text(dumps_canonical(listed))
    return {"source": settings.get("source"), "repo": settings.get("repo"), "revision": settings.get("revision"),
            "custody": {"file": custody_file, "sha256": sha256_bytes(custody) if custody is not None else None,
                        "files_sha256": files_sha256}}


def memory_facts(section: Mapping[str, Any], fingerprint_sha256: str | None) -> dict[str, Any]:
    """The memory option: name, target, its own keys (``settings``), ``config_sha256`` = sha256 of the
    canonical JSON of the whole section, and the code fingerprint (stage fingerprint's v2-memory.json)."""
    from mnemetric.io import dumps_canonical, sha256_text

    return {"name": section["name"], "target": section.get("_target_"),
            "settings": {k: v for k, v in section.items() if not str(k).startswith("_") and k != "name"},
            "config_sha256": sha256_text(dumps_canonical(dict(section))),
            "fingerprint_sha256": fingerprint_sha256}


def v2_manifest(settings: Mapping[str, Any], summary: Mapping[str, Any], path: str, *,
                data_verified: bool = False, facts: Mapping[str, Any] | None = None, custody_file: str | None = None,
                custody: bytes | None = None, fingerprint_sha256: str | None = None) -> dict[str, Any]:
    """metrics/run-v2.json: where the V2 numbers came from, in the run-manifest keys the task inventory
    reads (mnemetric.custody.inventory), nested with stable keys. Deterministic (no clock, no machine
    path). ``variant.sha256_verified`` is ``data_verified``: true only for a data root whose custody record
    (stage v2_prepare) verifies every file against the dataset pins — never the bundled sample, which is
    not an official file. ``facts``: :func:`component_facts` of the run (``V2Run.provenance``); without
    it the component blocks hold what the settings say. ``custody``: the custody record's bytes
    (:func:`dataset_facts`); ``fingerprint_sha256``: the memory's code fingerprint (stage fingerprint)."""
    both = summary.get("combined") or next(iter(summary["domains"].values()))
    facts = facts or {}
    reader = {"name": settings["reader"]["name"], "model": settings["reader"].get("model")}
    reader |= {k: v for k, v in (facts.get("reader") or {}).items() if k not in reader}
    checker = settings["checker"]
    judge = {"name": checker["name"], "kind": "llm" if checker.get("_partial_") else "offline",
             "model": checker.get("model"), "reasoning_effort": checker.get("reasoning_effort"),
             "max_completion_tokens": checker.get("max_completion_tokens"), "prompt_set_sha256": None}
    judge |= {k: v for k, v in (facts.get("checker") or {}).items() if k != "name"}
    counter = facts.get("token_counter") or {"name": settings["token_counter"].get("name"), "official": None}
    return {
        "schema": MANIFEST_SCHEMA, "path": path, "benchmark": FAMILY.display_name,
        "variant": {"name": settings["name"], "data_root": settings["data_root"], "haystack": settings["haystack"],
                    "sha256_verified": data_verified, **dataset_facts(settings, custody_file, custody)},
        "suite": {"name": "full"},
        "memory": memory_facts(settings["memory"], fingerprint_sha256),
        "reader": reader,
        "judge": judge,
        "token_counter": counter,
        "counts": {"questions": both["questions"], "judged": both["scored"], "failed": both["failed"]},
        "official_equivalence": {"value": bool(summary["official_equivalence"]["official"]),
                                 "reasons": list(summary["official_equivalence"]["reasons"])},
    }
