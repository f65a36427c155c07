"""Question shards: ``--shard K/N`` runs one deterministic, type-stratified share of the questions, and
:func:`merge` joins the shards' outputs into the bytes the unsharded run writes (generic: no family).

Assignment (:func:`assign`): the questions of the full set (the *universe*: a dataset, a questions file, a
reference file — in file order, each with its question type) are ordered by (type, file position) and dealt
round-robin to shards 1..N. Every type is split as evenly as possible and shard sizes differ by at most
one; the assignment is a function of the universe alone, so running a command on an input that is already
a shard selects the same questions again.

A sharded output ``OUT`` gets a manifest beside it, ``OUT.shard.json`` (:class:`Manifest`): the command,
``K/N``, the sha256 of the settings that decide the output (``config_sha256``), of the universe file
(``data_sha256``), of the inputs' lineage (``lineage_sha256``: the command, config, data and each input's
own lineage — an unsharded input by its bytes), the universe size, which of the command's outputs it is
(``output``, when the command writes more than one: retrieve's retrieval log and contexts share everything
else), and for every line of ``OUT`` (and of
its ``.failures.jsonl`` sidecar, when the command writes one) its question id and its sort key: the
position of its question in the unsharded run's output order. :func:`merge` checks the parts (one command
and output, one ``N``, each shard once, the same config, data and lineage, no question twice, each file as its
manifest says) and writes the lines in key order — exactly what the unsharded run writes, since every
command writes its lines in input order and each line depends on its own question only.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError
from mnemetric.io import atomic_open, dumps_canonical, sha256_file, write_json_atomic

FORMAT = "mnemetric-shard/1"
SUFFIX = ".shard.json"
FAILURES = ".failures.jsonl"
_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
_MERGE_FIX = "merge the N outputs of one sharded run: the same command, settings and data, shards 1..N once each"


@dataclass(frozen=True, order=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based: ``1/4`` … ``4/4``)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: Any, where: str = "--shard") -> Shard | None:
    """``"K/N"`` → :class:`Shard` (None for None or ""); anything else is a ConfigError naming ``where``."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if isinstance(text, Shard):
        return text
    m = _SPEC.match(str(text))
    fix = "give K/N with 1 <= K <= N, e.g. 1/4 (SLURM: $SLURM_ARRAY_TASK_ID/N with --array=1-N; " \
          "Kubernetes: $((JOB_COMPLETION_INDEX + 1))/N)"
    if not m:
        raise ConfigError(where, f"{text!r} is not a shard spec K/N", fix=fix)
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1:
        raise ConfigError(where, f"{text!r}: the shard count N must be >= 1", fix=fix)
    if not 1 <= k <= n:
        raise ConfigError(where, f"{text!r}: the shard index K must be in 1..{n}", fix=fix)
    return Shard(k, n)


def assign(universe: Sequence[tuple[str, str]], count: int) -> dict[str, int]:
    """question id → its shard (1..count) for the universe ``[(question_id, question_type), ...]`` in file
    order: ordered by (type, position), dealt round-robin."""
    order = sorted(range(len(universe)), key=lambda i: (universe[i][1], i))
    return {universe[i][0]: rank % count + 1 for rank, i in enumerate(order)}


def shard_ids(universe: Sequence[tuple[str, str]], shard: Shard | None) -> set[str] | None:
    """The question ids of ``shard`` (None: no shard, every question)."""
    if shard is None:
        return None
    return {qid for qid, k in assign(universe, shard.count).items() if k == shard.index}


def universe_sha256(universe: Sequence[tuple[str, str]]) -> str:
    return hashlib.sha256(dumps_canonical([list(u) for u in universe]).encode("utf-8")).hexdigest()


def config_sha256(config: Any) -> str:
    """sha256 of the canonical JSON of the settings that decide a command's output."""
    return hashlib.sha256(dumps_canonical(config).encode("utf-8")).hexdigest()


def lineage_sha256(command: str, config: Any, data_sha256: str, inputs: Sequence[str | None]) -> str:
    """A manifest's ``lineage_sha256``: the command, its config (hashed by :func:`config_sha256`), the data hash
    and each input's own lineage (an unsharded input: its bytes' sha256; a missing one: None)."""
    return config_sha256({"command": command, "config": config_sha256(config), "data": data_sha256,
                          "inputs": list(inputs)})


FOLDER_MANIFEST = "shard.json"


def manifest_path(path: str | Path) -> Path:
    """``OUT.shard.json`` beside a file; ``OUT/shard.json`` inside an output folder (a command whose output is
    a folder: its family's merger joins the parts, :func:`mnemetric.family.shard_merger`)."""
    return Path(path) / FOLDER_MANIFEST if Path(path).is_dir() else Path(f"{path}{SUFFIX}")


@dataclass(frozen=True)
class FileLines:
    """The lines of one output file: each one's question id and sort key."""

    question_ids: list[str] = field(default_factory=list)
    keys: list[list[int]] = field(default_factory=list)

    def to_record(self) -> dict[str, Any]:
        return {"question_ids": self.question_ids, "keys": self.keys}


@dataclass(frozen=True)
class Manifest:
    """``OUT.shard.json`` (module docstring)."""

    command: str
    shard: Shard
    config_sha256: str
    data_sha256: str
    lineage_sha256: str
    universe: int
    lines: FileLines
    failures: FileLines | None = None
    extra: dict[str, Any] | None = None
    """What the command's own merger needs (opaque here; a folder output's family reads it)."""
    output: str | None = None
    """Which output of the command (``retrieval log``, ``contexts``); None: its only one."""

    def to_record(self) -> dict[str, Any]:
        rec = {"format": FORMAT, "command": self.command, "shard": str(self.shard),
               "config_sha256": self.config_sha256, "data_sha256": self.data_sha256,
               "lineage_sha256": self.lineage_sha256, "universe": self.universe, "lines": self.lines.to_record()}
        if self.failures is not None:
            rec["failures"] = self.failures.to_record()
        if self.extra is not None:
            rec["extra"] = self.extra
        if self.output is not None:
            rec["output"] = self.output
        return rec

    @classmethod
    def read(cls, path: str | Path) -> Manifest:
        """The manifest of the output ``path``; none beside it is an InputError (not an output of a shard run)."""
        m = cls.read_if_present(path)
        if m is None:
            raise InputError(str(path), "<file>", "shard manifest",
                             f"no {manifest_path(path)}: not an output of a --shard run", fix=_MERGE_FIX)
        return m

    @classmethod
    def read_if_present(cls, path: str | Path) -> Manifest | None:
        """The manifest of the output ``path``, or None when there is none beside it (an unsharded output); one
        that is there but unreadable or malformed is an InputError."""
        file = str(manifest_path(path))
        try:
            raw = json.loads(Path(file).read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, ValueError) as exc:
            raise InputError(file, "<file>", "shard manifest", f"unreadable: {exc}", fix=_MERGE_FIX) from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise InputError(file, "<file>", "format", f"expected {FORMAT!r}", fix=_MERGE_FIX)
        try:
            def lines(r: Any) -> FileLines:
                return FileLines([str(q) for q in r["question_ids"]], [[int(x) for x in k] for k in r["keys"]])

            return cls(str(raw["command"]), parse_shard(raw["shard"], f"{file}: shard"), str(raw["config_sha256"]),
                       str(raw["data_sha256"]), str(raw["lineage_sha256"]), int(raw["universe"]),
                       lines(raw["lines"]), lines(raw["failures"]) if raw.get("failures") is not None else None,
                       dict(raw["extra"]) if raw.get("extra") is not None else None,
                       str(raw["output"]) if raw.get("output") is not None else None)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(file, "<file>", str(exc), "missing or malformed", fix=_MERGE_FIX) from None


# -- running a command on a shard ------------------------------------------------------------------


@dataclass
class ShardRun:
    """What one command needs to run on a shard: which questions, each input line's sort key, and the
    manifest of what it wrote. ``shard`` None: an unsharded run (nothing is filtered or written)."""

    command: str
    shard: Shard | None
    universe: Sequence[tuple[str, str]]
    data_file: str | Path | Sequence[str | Path] | None
    config: Any
    inputs: Sequence[str | Path] = ()
    ids: set[str] | None = None
    _data: str | None = field(default=None, init=False, repr=False, compare=False)
    """The data hash, once computed: every manifest of the run names the same data, and the data file can be
    GBs (hashed once per run, not once per output and its lineage)."""

    @classmethod
    def start(cls, command: str, shard: Shard | None, universe: Sequence[tuple[str, str]], *,
              data_file: str | Path | Sequence[str | Path] | None, config: Any,
              inputs: Sequence[str | Path] = ()) -> ShardRun:
        """A run of ``command``; a sharded input (one with a manifest) sets the shard when ``shard`` is None
        and must agree with it otherwise."""
        for path in inputs:
            if (mine := Manifest.read_if_present(path)) is not None:
                theirs = mine.shard
                if shard is None:
                    shard = theirs
                elif shard != theirs:
                    raise ConfigError("--shard", f"{shard} asked, but the input {path} is shard {theirs}",
                                      fix=f"run with --shard {theirs} (or without --shard) on that input")
        run = cls(command, shard, universe, data_file, config, tuple(inputs))
        run.ids = shard_ids(universe, shard)
        return run

    def keep(self, question_id: str) -> bool:
        return self.ids is None or question_id in self.ids

    def input_keys(self, path: str | Path, n: int, *, failures: bool = False) -> list[list[int]]:
        """The sort keys of the ``n`` lines of an input file (a sharded input's, from its manifest; else
        ``[line index]``)."""
        m = Manifest.read_if_present(path) if self.shard is not None else None
        if m is None:
            return [[0, i] if failures else [i] for i in range(n)]
        part = m.failures if failures else m.lines
        keys = part.keys if part is not None else []
        if len(keys) != n:
            raise InputError(str(path), "<file>", "lines", f"{n} line(s) but its shard manifest lists {len(keys)}",
                             fix="rerun the command that wrote it (the file and its .shard.json disagree)")
        return keys

    def lineage(self) -> str:
        parts = []
        for path in self.inputs:
            m = Manifest.read_if_present(path)
            parts.append(m.lineage_sha256 if m is not None else sha256_file(path) if Path(path).exists() else None)
        return lineage_sha256(self.command, self.config, self._data_sha256(), parts)

    def _data_sha256(self) -> str:
        def one(f: str | Path | None) -> str:
            return sha256_file(f) if f is not None and Path(f).exists() else ""

        if self._data is None:
            files = self.data_file
            own: Any = [one(f) for f in files] if isinstance(files, (list, tuple)) else one(files)
            self._data = config_sha256({"file": own, "universe": universe_sha256(self.universe)})
        return self._data

    def write_manifest(self, out: str | Path, lines: FileLines, failures: FileLines | None = None,
                       extra: dict[str, Any] | None = None, output: str | None = None) -> Path | None:
        """``OUT.shard.json`` (for an unsharded run: a stale one removed); ``output`` names which of the
        command's outputs ``out`` is, when it writes more than one. Write it before committing ``OUT``:
        a crash in between leaves a manifest that disagrees with the file (refused), never a partial
        file that looks whole."""
        if self.shard is None:
            manifest_path(out).unlink(missing_ok=True)
            return None
        m = Manifest(self.command, self.shard, config_sha256(self.config), self._data_sha256(), self.lineage(),
                     len(self.universe), lines, failures, extra, output)
        path = manifest_path(out)
        write_json_atomic(path, m.to_record())
        return path


# -- merging ---------------------------------------------------------------------------------------


def _line_ids(path: Path, expected: Sequence[str]) -> list[bytes]:
    """The lines of ``path`` (bytes, newline kept), each checked against the manifest's question id."""
    try:
        lines = path.read_bytes().splitlines(keepends=True)
    except FileNotFoundError:
        raise InputError(str(path), "<file>", "file", "missing", fix=_MERGE_FIX) from None
    if len(lines) != len(expected):
        raise InputError(str(path), "<file>", "lines", f"{len(lines)} line(s), its shard manifest lists "
                         f"{len(expected)}", fix="rerun the shard (the file was changed after it was written)")
    for n, (line, qid) in enumerate(zip(lines, expected, strict=True), start=1):
        try:
            got = json.loads(line).get("question_id")
        except (ValueError, AttributeError):
            got = None
        if got != qid:
            raise InputError(str(path), f"line {n}", "question_id", f"{got!r}, its shard manifest says {qid!r}",
                             fix="rerun the shard (the file was changed after it was written)")
    return lines


def without_sidecars(parts: Sequence[str | Path]) -> list[Path]:
    """``parts`` without the ``.failures.jsonl`` sidecars of other parts given: a shell glob over the shard
    outputs (``runs/judged.*.jsonl``) also matches ``runs/judged.1.jsonl.failures.jsonl``, which merge reads
    beside its part anyway."""
    given = {Path(p).resolve() for p in parts}
    return [Path(p) for p in parts if not (str(p).endswith(FAILURES)
                                           and Path(str(Path(p).resolve())[:-len(FAILURES)]) in given)]


def refuse_out_among_parts(out: str | Path, parts: Sequence[str | Path]) -> None:
    """``--out`` naming one of the parts (or its sidecar) would overwrite that part's output with the merge: a
    ConfigError naming it, before anything is read or written."""
    target = Path(out).resolve()
    for part in parts:
        mine = Path(part).resolve()
        if target in (mine, Path(f"{mine}{FAILURES}"), manifest_path(mine).resolve()) or mine in target.parents:
            raise ConfigError("--out", f"{out} is the shard output {part} (or inside it): merging would overwrite it",
                              fix="give --out a new path, e.g. the unsharded run's file name")


def check_parts(parts: Sequence[str | Path]) -> list[tuple[Path, Manifest]]:
    """The parts' manifests, checked (module docstring); every problem named with the parts involved."""
    if not parts:
        raise ConfigError("PART", "no shard outputs given", fix=_MERGE_FIX)
    got = [(Path(p), Manifest.read(p)) for p in parts]
    first_path, first = got[0]
    for path, m in got[1:]:
        for what, mine, theirs in (("command", m.command, first.command), ("output", m.output, first.output),
                                   ("shard count", m.shard.count, first.shard.count)):
            if mine != theirs:
                raise InputError(str(path), "shard manifest", what, f"{mine!r}, but {first_path} has {theirs!r}",
                                 fix=_MERGE_FIX)
        for what, mine, theirs in (("config mismatch", m.config_sha256, first.config_sha256),
                                   ("data mismatch", m.data_sha256, first.data_sha256),
                                   ("input mismatch", m.lineage_sha256, first.lineage_sha256)):
            if mine != theirs:
                raise InputError(str(path), f"shard {m.shard}", what, f"made with {what.split()[0]} {mine[:12]}…, "
                                 f"{first_path} (shard {first.shard}) with {theirs[:12]}…",
                                 fix="rerun the shard with the same settings and data as the others")
    by_index: dict[int, Path] = {}
    for path, m in got:
        if m.shard.index in by_index:
            raise InputError(str(path), f"shard {m.shard}", "overlap", f"shard {m.shard} also given as "
                             f"{by_index[m.shard.index]}", fix=_MERGE_FIX)
        by_index[m.shard.index] = path
    missing = [k for k in range(1, first.shard.count + 1) if k not in by_index]
    if missing:
        raise InputError(", ".join(str(p) for p, _ in got), "shards", "gap",
                         f"shard(s) {', '.join(f'{k}/{first.shard.count}' for k in missing)} missing",
                         fix=_MERGE_FIX)
    owner: dict[str, Path] = {}
    for path, m in got:
        for qid in m.lines.question_ids:
            if qid in owner:
                raise InputError(str(path), qid, "overlap", f"question also in {owner[qid]}", fix=_MERGE_FIX)
            owner[qid] = path
    return got


def _merged(entries: Iterable[tuple[list[int], bytes]]) -> list[bytes]:
    return [line for _, line in sorted(entries, key=lambda e: e[0])]


@dataclass
class PreparedMerge:
    """The parts of a merge, every check done and their lines read (:func:`prepare_merge`); :meth:`write` writes."""

    command: str
    shards: int
    main: list[tuple[list[int], bytes]]
    fails: list[tuple[list[int], bytes]] | None
    parts: list[tuple[Path, Shard]]
    """Each part and its shard (from its manifest), in the order given."""

    def write(self, out: str | Path) -> dict[str, Any]:
        """OUT (and OUT.failures.jsonl), atomically; ``{lines, failures, shards, command}``."""
        with atomic_open(out, "wb") as fh:
            fh.writelines(_merged(self.main))
        if self.fails is not None:
            with atomic_open(f"{out}{FAILURES}", "wb") as fh:
                fh.writelines(_merged(self.fails))
        return {"command": self.command, "shards": self.shards, "lines": len(self.main),
                "failures": len(self.fails) if self.fails is not None else None}


def _failures_listed(got: Sequence[tuple[Path, Manifest]]) -> bool:
    """Whether the parts list a failures sidecar: all of them or none. A command that writes one (answer, judge)
    lists it in every shard's manifest, empty when the shard had no failures, so a part without the listing is
    not a part without failures: its manifest was not written by that command (hand-made, or edited), and a
    merge that read only the listed sidecars, or none, would lose failures. Refused, naming both parts."""
    listed = [path for path, m in got if m.failures is not None]
    if listed and len(listed) < len(got):
        bare = next(path for path, m in got if m.failures is None)
        raise InputError(str(manifest_path(bare)), "<file>", "failures",
                         f"missing, but {manifest_path(listed[0])} lists its {FAILURES} sidecar: merging the "
                         "parts would lose failures", fix="rerun that shard with the command and settings of the "
                         "others (its manifest then lists its failures sidecar, empty when it had none)")
    return bool(listed)


def prepare_merge(out: str | Path, parts: Sequence[str | Path]) -> PreparedMerge:
    """Every check of a merge (the parts' manifests, each file's lines against its manifest), nothing written:
    a caller with files of its own beside OUT checks everything before it writes any of them."""
    refuse_out_among_parts(out, parts)
    got = check_parts(parts)
    main: list[tuple[list[int], bytes]] = []
    fails: list[tuple[list[int], bytes]] = []
    has_failures = _failures_listed(got)
    for path, m in got:
        main.extend(zip(m.lines.keys, _line_ids(path, m.lines.question_ids), strict=True))
        if has_failures:
            fails.extend(zip(m.failures.keys, _line_ids(Path(f"{path}{FAILURES}"), m.failures.question_ids),
                             strict=True))
    return PreparedMerge(got[0][1].command, got[0][1].shard.count, main, fails if has_failures else None,
                         [(path, m.shard) for path, m in got])


def merge(out: str | Path, parts: Sequence[str | Path]) -> dict[str, Any]:
    """Join shard outputs into ``out`` (and ``out.failures.jsonl`` when the parts have failures), atomically;
    returns ``{lines, failures, shards, command}``."""
    return prepare_merge(out, parts).write(out)


def record_manifest(run: ShardRun | None, out: str | Path, lines: FileLines, failures: FileLines | None = None,
                    output: str | None = None) -> None:
    """:meth:`ShardRun.write_manifest`, or (no run) remove a stale manifest of ``out``."""
    if run is None:
        manifest_path(out).unlink(missing_ok=True)
    else:
        run.write_manifest(out, lines, failures, output=output)
