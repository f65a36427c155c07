"""A benchmark family as one object: what the generic layers (custody) need to know of a family.

Each family package exposes one (``mnemetric.longmemeval.family.FAMILY``,
``mnemetric.longmemeval_v2.family.FAMILY``), built from the ``benchmark`` conf group by ``_target_``
(``conf/benchmark/<option>.yaml``). custody/ takes every family fact from it, so custody imports no
family: a newcomer plugs a family in with one package and one conf option.

What a family says (the :class:`Family` protocol):

* ``name``: the conf option and the marker spelling of ``@pytest.mark.task(name, task)``
  (``longmemeval``); ``display_name``: the ``benchmark`` field of its run manifests
  (``LongMemEval``); ``metrics``: its headline metrics file.
* ``task_metrics``: task -> the :class:`TaskMetric` (file, value key, count key) that measures it
  (the task inventory's ``measured`` rule).
* ``official``: the :class:`OfficialProtocol` a run must match to be called the family's official
  protocol (the publishability gate, :mod:`mnemetric.custody.gate`), or None when the family has no
  such gate in custody.
* ``crosscheck``: the :class:`CrosscheckSpec` (pinned upstream scoring scripts + the family's own
  functions to compare with), or None when the family has no cross-check.
* ``run_manifest``: the repo path of the family's run manifest (``metrics/run.json``), or None.
* ``manifest_sections``: params -> the family's sections of that manifest (read from the run's
  files; :func:`mnemetric.custody.manifest.build_manifest` frames them with ``schema``,
  ``benchmark`` and the gate's ``official_equivalence``), or None when another stage writes it.
* ``card``: the :class:`CardSpec` of its result card (which metrics files, which rows), or None.
* ``output_files``: params -> the run's files whose sha256 custody keeps
  (:mod:`mnemetric.custody.sha256_manifest`), or None.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mnemetric.errors import ConfigError


@dataclass(frozen=True)
class TaskMetric:
    """A number in a metrics file and the count of questions behind it (dotted paths)."""

    file: str
    value: str
    count: str

    def ref(self) -> str:
        return f"{self.file}#{self.value}"


@dataclass(frozen=True)
class OfficialProtocol:
    """The conditions of a family's publishability gate (values from the family's upstream facts)."""

    source: str
    """The variant ``source`` of an official pinned dataset file."""
    suite: str
    profile: str
    judge_model: str
    judge_params: Mapping[str, Any]
    endpoint: str
    prompt_set_sha256: str | None
    """The pinned judge prompt set (None: not recorded, so no prompt set can match)."""
    official_variants: frozenset[str]
    """Variant names that are official files (the inventory's full held-out rule)."""
    judge_kind: str
    """``judge.kind`` of the upstream LLM judge (the inventory's judge-executed rule)."""


@dataclass(frozen=True)
class CrosscheckSpec:
    """Upstream's own scoring scripts (pinned) and the family functions their output is compared with.

    ``score_retrieval(log, granularity)`` -> ``{"granularity", "aggregate": {"exclude_abs": {level:
    {metric: value}}}}``; ``judged_labels(path)`` -> [(question_id, label, model)];
    ``reference_types(path)`` -> {question_id: question_type}; ``qa_estimates(pairs, types, file)``
    -> ``{"per_type": {type: {"accuracy", "n"}}, "task_averaged", "overall", "abstention": {"accuracy", "n"}}``.
    The script outputs are parsed in the layouts of LongMemEval's print_retrieval_metrics.py and
    print_qa_metrics.py (:mod:`mnemetric.custody.crosscheck`); a family whose scripts print otherwise
    needs its own parser there.
    """

    repo: str
    revision: str
    retrieval_script: str
    qa_script: str
    judge_script: str
    pinned_sha256: Mapping[str, str]
    """Upstream path -> sha256 of every file verified before a script runs."""
    lock: Path
    printed: Mapping[str, tuple[str, ...]]
    """Metric names the retrieval script prints per level."""
    question_types: tuple[str, ...]
    judge_model: str
    judge_alias: str
    """The model alias the judge script takes as its first argument; it writes ``HYP.eval-results-<alias>``."""
    score_retrieval: Callable[[Path, str], Mapping[str, Any]]
    judged_labels: Callable[[Path], list[tuple[str, bool, str | None]]]
    reference_types: Callable[[Path], Mapping[str, str]]
    qa_estimates: Callable[[Sequence[tuple[str, bool]], Mapping[str, str], str], Mapping[str, Any]]


@dataclass(frozen=True)
class CardRow:
    """One row of a result card's table: a number, its 95% interval and its count (None: not known)."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None


@dataclass(frozen=True)
class CardSpec:
    """What a family's result card shows (:mod:`mnemetric.custody.card` draws the frame around it).

    ``inputs``: role -> candidate repo paths of a metrics file (the first that exists is read);
    ``rows(docs)``: role -> the read document (None when no candidate exists) -> the table rows
    (an empty list: no numbers to show, and the card says ``empty`` instead of a table).
    """

    inputs: Mapping[str, tuple[str, ...]]
    rows: Callable[[Mapping[str, Mapping[str, Any] | None]], Sequence[CardRow]]
    empty: str = "(no metrics)"


@runtime_checkable
class Family(Protocol):
    """A benchmark family (module docstring)."""

    name: str
    display_name: str
    metrics: str
    task_metrics: Mapping[str, TaskMetric]
    official: OfficialProtocol | None
    crosscheck: CrosscheckSpec | None
    run_manifest: str | None
    manifest_sections: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None
    card: CardSpec | None
    output_files: Callable[[Mapping[str, Any]], Sequence[str]] | None


FIELDS = ("name", "display_name", "metrics", "task_metrics", "official", "crosscheck", "run_manifest",
          "manifest_sections", "card", "output_files")


def check_family(obj: Any, where: str) -> Family:
    """``obj`` if it has every field of :class:`Family` with the right kinds, else a ConfigError naming ``where``."""
    missing = [f for f in FIELDS if not hasattr(obj, f)]
    if missing:
        raise ConfigError(where, f"{type(obj).__name__} is not a benchmark family (no {', '.join(missing)})",
                          fix="build an object with the fields of mnemetric.family.Family")
    if not (isinstance(obj.name, str) and obj.name and isinstance(obj.display_name, str)):
        raise ConfigError(f"{where}.name", "a family needs a non-empty name and a display_name")
    bad = [t for t, m in dict(obj.task_metrics).items() if not isinstance(m, TaskMetric)]
    if bad:
        raise ConfigError(where, f"task_metrics of {obj.name!r}: {bad} are not TaskMetric")
    for key, kind in (("official", OfficialProtocol), ("crosscheck", CrosscheckSpec), ("card", CardSpec)):
        if getattr(obj, key) is not None and not isinstance(getattr(obj, key), kind):
            raise ConfigError(f"{where}.{key}", f"expected a {kind.__name__} or None")
    for key in ("manifest_sections", "output_files"):
        if getattr(obj, key) is not None and not callable(getattr(obj, key)):
            raise ConfigError(f"{where}.{key}", "expected a callable (params -> ...) or None")
    if obj.run_manifest is not None and not isinstance(obj.run_manifest, str):
        raise ConfigError(f"{where}.run_manifest", "expected a repo path or None")
    return obj


def build_family(section: Mapping[str, Any], where: str = "benchmark") -> Family:
    """The family of a ``benchmark`` params/conf section, built by its ``_target_`` and checked."""
    from mnemetric.config import build

    return check_family(build(dict(section), where), where)


def conf_families(conf_dir: str | Path | None = None) -> tuple[Family, ...]:
    """Every option of the ``benchmark`` conf group (the packaged conf/ by default), built, in name order.

    Each option file is read as plain YAML (a benchmark option holds no interpolation)."""
    import yaml

    from mnemetric.config import package_conf_dir

    root = Path(conf_dir) if conf_dir is not None else package_conf_dir()
    out = []
    for path in sorted((root / "benchmark").glob("*.yaml")):
        section = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        out.append(build_family(section, f"benchmark ({path.name})"))
    return tuple(out)


def headline_family(params: Mapping[str, Any] | None = None) -> Family:
    """The headline family: built from the params' ``benchmark`` section, else from the packaged conf's
    default composition (the ``benchmark`` option of conf/config.yaml)."""
    if params is not None and isinstance(params.get("benchmark"), Mapping):
        return build_family(params["benchmark"])
    from mnemetric.config import compose

    return build_family(compose()["benchmark"])


def family_named(name: str, conf_dir: str | Path | None = None) -> Family:
    """The family of the ``benchmark`` conf option called ``name`` (the registry: :func:`conf_families`)."""
    known = by_name(conf_families(conf_dir))
    if name not in known:
        raise ConfigError("benchmark", f"no benchmark family is named {name!r}", fix=f"one of {sorted(known)}")
    return known[name]


def by_name(families: Iterable[Family]) -> dict[str, Family]:
    """name -> family; two families of one name are a ConfigError."""
    out: dict[str, Family] = {}
    for fam in families:
        if fam.name in out:
            raise ConfigError("benchmark", f"two families are named {fam.name!r}")
        out[fam.name] = fam
    return out
