"""The result card: a short Markdown block ready to paste into an issue or a paper appendix.

What researchers post in the upstream tracker (LongMemEval issues #51, #53), written from the run's
own evidence instead of by hand. The frame is generic: a title naming the benchmark (the manifest's
``benchmark``, else the family's ``display_name``), memory system, dataset variant and suite; the
table of the family's numbers (``Family.card``: which metrics files, which rows — value, 95%
interval, n); then the family's custody bullets (``CardSpec.custody``: LongMemEval's dataset and
revision with sha256, suite, memory fingerprint, reader, judge snapshot(s) and prompt-set sha256,
the judged file's sha256, scoring profile, counts; LongMemEval-V2's data custody, reader, checker,
token counter; a family without its own gets :func:`frame_lines`: dataset, suite, memory, counts);
and official_equivalence with its reasons (:class:`mnemetric.official.OfficialEquivalence`). A key
the manifest lacks prints as ``—``; the frame's keys are read through
:class:`mnemetric.custody.manifest.ManifestShown` (a key of the wrong type is an InputError naming the file
and the key).

:func:`render_card` is pure; :func:`read_card_inputs` is the I/O edge (the first existing file of
each role of the family's card spec). This module imports no family.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemetric.custody.manifest import ManifestShown
from mnemetric.errors import ConfigError, InputError
from mnemetric.family import CardRow, Family
from mnemetric.io import require_file
from mnemetric.official import KEY, OfficialEquivalence




def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}"


def code(x: Any) -> str:
    """A value as inline code; an absent one as ``—``."""
    return "—" if x in (None, "", []) else f"`{x}`"


def table(rows: Sequence[CardRow]) -> list[str]:
    """The Markdown table of the rows: metric, value (4 decimals), 95% interval, n."""
    out = ["| metric | value | 95% interval | n |", "|---|---|---|---|"]
    for r in rows:
        ci = "—" if r.low is None or r.high is None else f"[{_fmt(r.low)}, {_fmt(r.high)}]"
        out.append(f"| {r.label} | {_fmt(r.value)} | {ci} | {'—' if r.n is None else r.n} |")
    return out


def _count(x: int | None) -> Any:
    return "—" if x is None else x


def frame_lines(run: Mapping[str, Any], outputs: Mapping[str, Any] | None = None,
                params: Mapping[str, Any] | None = None, file: str = "<run manifest>") -> list[str]:
    """The custody bullets of a family without its own: dataset (verified or not), suite, memory, counts."""
    r = ManifestShown.from_record(run, file=file)
    return [f"- dataset: {code(r.variant_name)} ({'verified' if r.variant_sha256_verified else 'NOT verified'})",
            f"- suite: {code(r.suite_name)}", f"- memory system: {code(r.memory_name)}",
            f"- {_count(r.counts_judged)} of {_count(r.counts_questions)} judged, {_count(r.counts_failed)} failed"]


def gate_lines(run: Mapping[str, Any], file: str = "<run manifest>") -> list[str]:
    """official_equivalence and its reasons (the one record, :class:`OfficialEquivalence`)."""
    raw = run.get(KEY)
    if raw is None:
        return ["- official_equivalence: — (the run manifest does not say)"]
    gate = OfficialEquivalence.from_record(raw, file=file)
    return [f"- official_equivalence: **{str(gate.value).lower()}**", *[f"  - {r}" for r in gate.reasons]]


def render_card(family: Family, run: Mapping[str, Any], docs: Mapping[str, Mapping[str, Any] | None],
                outputs: Mapping[str, Any] | None, params: Mapping[str, Any] | None = None,
                file: str = "<run manifest>") -> str:
    """The card's Markdown (module docstring); ``docs``: the family card's role -> metrics document (or None)."""
    if family.card is None:
        raise ConfigError("benchmark", f"{family.display_name} has no result card",
                          fix="choose a benchmark whose family defines a card (Family.card)")
    r = ManifestShown.from_record(run, file=file)
    rows = list(family.card.rows(docs))
    lines = [f"#### {r.benchmark or family.display_name} result: memory {code(r.memory_name)} on "
             f"{code(r.variant_name)} (suite {code(r.suite_name)})", ""]
    lines += table(rows) if rows else [family.card.empty]
    custody = family.card.custody or (lambda run, outputs, params: frame_lines(run, outputs, params, file))
    lines += ["", *custody(run, outputs, params), *gate_lines(run, file)]
    return "\n".join(lines) + "\n"


def read_json(path: str | Path) -> Any:
    """A JSON file; missing or invalid is an InputError naming it."""
    file = require_file(path, fix="run the pipeline (dvc repro) first")
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), "<file>", "<json>", f"not valid JSON ({exc})") from None


def read_card_inputs(family: Family, overrides: Mapping[str, str | Path] | None = None,
                     root: str | Path = ".") -> dict[str, Any]:
    """role -> the document of the first existing file of the family card's candidates (None: none exists).

    ``overrides`` (role -> path) replace a role's candidates; an override that does not exist is an
    InputError, a role the card does not know a ConfigError."""
    if family.card is None:
        return {}
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(family.card.inputs))
    if unknown:
        raise ConfigError("--metrics", f"{family.display_name}'s card has no role {unknown}",
                          fix=f"one of {sorted(family.card.inputs)}")
    out: dict[str, Any] = {}
    for role, candidates in family.card.inputs.items():
        if role in overrides:
            out[role] = read_json(Path(root) / overrides[role])
            continue
        found = next((Path(root) / c for c in candidates if (Path(root) / c).is_file()), None)
        out[role] = read_json(found) if found is not None else None
    return out


def card_from_files(family: Family, params: Mapping[str, Any] | None = None, *, run: str | Path | None = None,
                    outputs: str | Path | None = "data/custody/outputs.sha256.json",
                    overrides: Mapping[str, str | Path] | None = None, root: str | Path = ".") -> str | None:
    """The family's card from the files of the run (None when its run manifest does not exist).

    ``params``: the composed params (nested), for the family's custody bullets (e.g. where the
    judged file is)."""
    rel = run if run is not None else family.run_manifest or ""
    manifest = Path(root) / rel
    if run is None and (family.run_manifest is None or not manifest.is_file()):
        return None
    docs = read_card_inputs(family, overrides, root)
    out_path = Path(root) / outputs if outputs is not None else None
    out_doc = read_json(out_path) if out_path is not None and out_path.is_file() else None
    return render_card(family, read_json(manifest), docs, out_doc, params, file=str(rel))
