"""A benchmark family as one object: what the generic layers (custody, schema, the doors) ask of a family.

Each family package exposes one (``mnemetric.longmemeval.family.FAMILY``,
``mnemetric.longmemeval_v2.family.FAMILY``), built from the ``benchmark`` conf group by ``_target_``
(``conf/benchmark/<option>.yaml``). The generic layers take every family fact from it and import no
family: a newcomer plugs a family in with one package, its conf options and its dvc.yaml stages.
The family owns its rules; custody owns the frame.

What a family says (the :class:`Family` protocol):

* ``name``: the conf option and the marker spelling of ``@pytest.mark.task(name, task)``
  (``longmemeval``); ``display_name``: the ``benchmark`` field of its run manifests
  (``LongMemEval``); ``metrics``: its headline metrics file.
* ``task_metrics``: task -> the :class:`TaskMetric` (file, value key, count key) that measures it
  (the task inventory's ``measured`` rule).
* ``official_reasons(manifest)``: the family's publishability gate — one reason per failed
  condition of its official protocol (empty: official); custody frames it as
  :class:`mnemetric.official.OfficialEquivalence` (:mod:`mnemetric.custody.gate`).
  ``required_sections``: the manifest sections that gate reads (custody refuses a manifest
  without them).
* ``crosscheck``: the family's :class:`CrosscheckScripts` (pinned upstream scripts, how to run
  them and parse what they print), or None when the family has no cross-check.
* ``inventory_review(inventory, manifests, crosscheck)``: the task inventory
  (:class:`mnemetric.custody.inventory_file.Inventory`) with the family's review blocks written from
  its own run manifests (and the cross-check evidence), or None.
* ``run_manifest``: the repo path of the family's run manifest (``metrics/run.json``), or None.
* ``manifest_sections``: params -> the family's sections of that manifest (read from the run's
  files; :func:`mnemetric.custody.manifest.build_manifest` frames them with ``schema``,
  ``benchmark`` and the gate's ``official_equivalence``), or None when another stage writes it.
* ``card``: the :class:`CardSpec` of its result card (which metrics files, which rows, which
  custody lines), or None.
* ``output_files``: params -> the run's files whose sha256 custody keeps
  (:mod:`mnemetric.custody.sha256_manifest`), or None.
* ``params_sections``: top-level params section -> its :class:`mnemetric.schema.Section` (typed
  dataclass, or an open component section); :mod:`mnemetric.schema` checks (and registers with
  Hydra) the union over the ``benchmark`` conf group. ``conf_groups``: the conf groups the family
  chooses options from, each with its default option (group -> option); the schema adds every group
  conf/config.yaml's defaults list does not name to the composition (:func:`mnemetric.schema.run_schema`),
  so a new family edits no config.yaml.
* ``manifest_params`` / ``output_params``: the dotted params ``manifest_sections`` / ``output_files``
  read (the generic stages ``run_manifest FAMILY`` and ``custody_manifest FAMILY`` declare them).
* ``fingerprints``: dotted params section of a component -> the file stem the fingerprint stage
  writes its code fingerprint to (``memory`` -> data/fingerprints/memory.json).
* ``report_params`` and ``report(params, card)``: the flat params its report reads and the
  :class:`mnemetric.report.model.Report` it fills (stage report and `mnemetric report`), or None.
* ``shard_mergers`` (optional): command -> the function that joins the shard parts of a command whose output
  is a folder (`mnemetric merge`, :func:`shard_merger`); a family without it has line-file shards only.
* ``summary(params, read)``: its row of `mnemetric runs` (:class:`RunSummary`) from a revision's
  params and files (``read(path)``: the JSON document at that revision, or None).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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

    def read(self, doc: Any) -> tuple[float | None, int | None]:
        """(the number at :attr:`value`, the count at :attr:`count`) in the metrics document ``doc`` (of
        :attr:`file`): None where a path part is absent or null. A node on the path that is not an object, a
        value that is not a number, or a count that is not an integer is an InputError naming the file and
        the dotted field."""
        from mnemetric.records import OPTIONAL_NUMBER, Fields

        def at(path: str, kind: tuple[tuple[type, ...], str]) -> Any:
            *parents, last = path.split(".")
            view = Fields.shown(doc, file=self.file)
            for part in parents:
                view = view.within(part)
            return view.maybe(last, kind)

        return at(self.value, OPTIONAL_NUMBER), at(self.count, ((int,), "an integer"))


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
    (an empty list: no numbers to show, and the card says ``empty`` instead of a table);
    ``custody(run, outputs, params)``: the run manifest, the sha256 custody manifest (or None) and
    the composed params (or None) -> the card's custody bullets (Markdown lines, the family's own
    facts: its data, components and counts). The frame adds official_equivalence with its reasons.
    """

    inputs: Mapping[str, tuple[str, ...]]
    rows: Callable[[Mapping[str, Mapping[str, Any] | None]], Sequence[CardRow]]
    empty: str = "(no metrics)"
    custody: Callable[[Mapping[str, Any], Mapping[str, Any] | None, Mapping[str, Any] | None], Sequence[str]] | None = None


@dataclass(frozen=True)
class RunSummary:
    """A family's row of `mnemetric runs`: headline numbers (label -> value), comparability keys, the gate."""

    headline: Mapping[str, float | None]
    keys: Mapping[str, Any]
    official: Any = None
    """The run manifest's :class:`mnemetric.official.OfficialEquivalence`, or None (no manifest)."""
    memory: str | None = None


class CrosscheckScripts(Protocol):
    """A family's upstream scoring scripts, pinned, and how to compare their output with ours.

    custody (:func:`mnemetric.custody.crosscheck.crosscheck`) verifies the checkout against
    ``pinned_sha256``, builds the interpreter from ``lock`` and hands both to :meth:`run`; the
    family runs its scripts, parses their print layout and returns the checks."""

    repo: str
    revision: str
    pinned_sha256: Mapping[str, str]
    lock: Path
    judge_script: str
    """The upstream path of the judge script (the inventory's judge-prompt-parity evidence)."""

    def input_files(self, inputs: Mapping[str, Any]) -> list[Path]:
        """The input files of this cross-check (checked: what goes together, something to check)."""
        ...

    def run(self, python: str | Path, root: Path, inputs: Mapping[str, Any]) -> tuple[list[Any], list[dict], str | None]:
        """(checks, not_run, judge_endpoint): the :class:`mnemetric.custody.crosscheck.Check` list."""
        ...


@runtime_checkable
class Family(Protocol):
    """A benchmark family (module docstring)."""

    name: str
    display_name: str
    metrics: str
    task_metrics: Mapping[str, TaskMetric]
    required_sections: Sequence[str]
    crosscheck: CrosscheckScripts | None
    inventory_review: Callable[[Any, Sequence[Mapping[str, Any]], Mapping[str, Any] | None], Any] | None
    """(Inventory, the family's manifests, the cross-check or None) -> the Inventory with its review blocks."""
    run_manifest: str | None
    manifest_sections: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None
    card: CardSpec | None
    output_files: Callable[[Mapping[str, Any]], Sequence[str]] | None
    params_sections: Mapping[str, Any]
    conf_groups: Mapping[str, str]
    manifest_params: Sequence[str]
    output_params: Sequence[str]
    fingerprints: Mapping[str, str]
    report_params: Sequence[str]
    report: Callable[[Mapping[str, Any], str], Any] | None

    def official_reasons(self, manifest: Mapping[str, Any]) -> list[str]: ...

    def summary(self, params: Mapping[str, Any], read: Callable[[str], Any]) -> RunSummary: ...


@dataclass(frozen=True)
class FamilyBase:
    """A family's defaults for everything it may leave out: no gate conditions of its own (so never
    official), no cross-check, no inventory review, no run manifest, card or report, no params sections,
    conf groups or fingerprinted components. Subclass it (a frozen dataclass) and set what the family has."""

    name: str = ""
    display_name: str = ""
    metrics: str = ""
    task_metrics: Mapping[str, TaskMetric] = field(default_factory=dict)
    required_sections: Sequence[str] = ()
    crosscheck: CrosscheckScripts | None = None
    inventory_review: Callable[..., Any] | None = None
    run_manifest: str | None = None
    manifest_sections: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    card: CardSpec | None = None
    output_files: Callable[[Mapping[str, Any]], Sequence[str]] | None = None
    params_sections: Mapping[str, Any] = field(default_factory=dict)
    conf_groups: Mapping[str, str] = field(default_factory=dict)
    manifest_params: Sequence[str] = ()
    output_params: Sequence[str] = ()
    fingerprints: Mapping[str, str] = field(default_factory=dict)
    report_params: Sequence[str] = ()
    report: Callable[..., Any] | None = None
    shard_mergers: Mapping[str, Callable[..., Any]] = field(default_factory=dict)

    def official_reasons(self, manifest: Mapping[str, Any]) -> list[str]:
        return [f"{self.display_name} has no official protocol to check a run against"]

    def summary(self, params: Mapping[str, Any], read: Callable[[str], Any]) -> RunSummary:
        """No headline numbers or keys; the run manifest's verdict when there is one."""
        from mnemetric.official import KEY, OfficialEquivalence

        run = read(self.run_manifest) if self.run_manifest else None
        raw = run.get(KEY) if isinstance(run, Mapping) else None
        return RunSummary({}, {"benchmark": self.name},
                          None if raw is None else OfficialEquivalence.from_record(raw, file=str(self.run_manifest)))


FIELDS = ("name", "display_name", "metrics", "task_metrics", "official_reasons", "required_sections", "crosscheck",
          "inventory_review", "run_manifest", "manifest_sections", "card", "output_files", "params_sections",
          "conf_groups", "manifest_params", "output_params", "fingerprints", "report_params", "report", "summary")


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
    if obj.card is not None and not isinstance(obj.card, CardSpec):
        raise ConfigError(f"{where}.card", "expected a CardSpec or None")
    for key in ("official_reasons", "summary"):
        if not callable(getattr(obj, key)):
            raise ConfigError(f"{where}.{key}", "expected a method")
    for key in ("manifest_sections", "output_files", "inventory_review", "report"):
        if getattr(obj, key) is not None and not callable(getattr(obj, key)):
            raise ConfigError(f"{where}.{key}", "expected a callable or None")
    if obj.run_manifest is not None and not isinstance(obj.run_manifest, str):
        raise ConfigError(f"{where}.run_manifest", "expected a repo path or None")
    for key in ("required_sections", "manifest_params", "output_params", "report_params"):
        value = getattr(obj, key)
        if isinstance(value, str) or not all(isinstance(x, str) for x in value):
            raise ConfigError(f"{where}.{key}", "expected a sequence of names")
    for key in ("params_sections", "fingerprints"):
        if not isinstance(getattr(obj, key), Mapping):
            raise ConfigError(f"{where}.{key}", "expected a mapping")
    groups = obj.conf_groups
    if not isinstance(groups, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in groups.items()):
        raise ConfigError(f"{where}.conf_groups", "expected a mapping of conf group -> its default option")
    return obj


def build_family(section: Mapping[str, Any], where: str = "benchmark") -> Family:
    """The family of a ``benchmark`` params/conf section, built by its ``_target_`` and checked."""
    from mnemetric.config import build

    return check_family(build(dict(section), where), where)


def conf_families(conf_dir: str | Path | None = None) -> tuple[Family, ...]:
    """Every option of the ``benchmark`` conf group, built, in name order: the registry of families.
    ``conf_dir`` defaults to the project's conf (:func:`mnemetric.config.project_conf_dir`: ./conf when
    it holds a config.yaml, else the packaged one), so a family added as conf/benchmark/<name>.yaml is found.

    Each option file is read as plain YAML (a benchmark option holds no interpolation)."""
    import yaml

    from mnemetric.config import project_conf_dir

    root = Path(conf_dir) if conf_dir is not None else project_conf_dir()
    out = []
    for path in sorted((root / "benchmark").glob("*.yaml"), key=lambda p: p.stem):
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


def families_from_args(args: Sequence[str], conf_dir: str | Path | None = None) -> tuple[Family, ...]:
    """The families a generic stage is given on its command line (``python -m mnemetric.stages.run_manifest
    longmemeval``), from the registry; none given is a ConfigError."""
    if not args:
        raise ConfigError("stage command", "names no benchmark family",
                          fix=f"append the family's name to the dvc.yaml cmd (one of {sorted(by_name(conf_families(conf_dir)))})")
    return tuple(family_named(a, conf_dir) for a in args)


def one_family(args: Sequence[str], conf_dir: str | Path | None = None) -> Family:
    """The one family a per-family stage is given on its command line (:func:`families_from_args`)."""
    fams = families_from_args(args, conf_dir)
    if len(fams) != 1:
        raise ConfigError("stage command", f"names {len(fams)} families ({' '.join(args)}); this stage takes one")
    return fams[0]


def shard_merger(command: str, conf_dir: str | Path | None = None) -> Callable[..., Any] | None:
    """The merger a family offers for the shard parts of ``command`` (its optional ``shard_mergers``: command ->
    ``merge(out, parts, **timed) -> {command, shards, lines, failures}``; ``timed``, only when given to
    `mnemetric merge`: ``latency`` (the parts' measured-latency sidecars) and ``latency_out``), or None: the parts
    are line files that :func:`mnemetric.shard.merge` joins."""
    for fam in conf_families(conf_dir):
        merger = dict(getattr(fam, "shard_mergers", None) or {}).get(command)
        if merger is not None:
            return merger
    return None


def by_name(families: Iterable[Family]) -> dict[str, Family]:
    """name -> family; two families of one name are a ConfigError."""
    out: dict[str, Family] = {}
    for fam in families:
        if fam.name in out:
            raise ConfigError("benchmark", f"two families are named {fam.name!r}")
        out[fam.name] = fam
    return out
