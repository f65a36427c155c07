"""The result card: a short Markdown block ready to paste into an issue or a paper appendix.

What researchers post in the upstream tracker (LongMemEval issues #51, #53), written from the run's
own evidence instead of by hand. The frame is generic: a title naming the benchmark (the manifest's
``benchmark``, else the family's ``display_name``), memory system, dataset variant and suite; the
table of the family's numbers (``Family.card``: which metrics files, which rows — value, 95%
interval, n); then the custody facts of the run manifest — dataset and its revision with sha256,
suite, memory system and its fingerprint, reader, judge snapshot(s) and prompt-set sha256, the
sha256 of the judged file (from the sha256 custody manifest), scoring profile, counts — and
official_equivalence with its reasons. A key the manifest lacks prints as ``—`` / ``None``.

:func:`render_card` is pure; :func:`read_card_inputs` is the I/O edge (the first existing file of
each role of the family's card spec). This module imports no family.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError
from mnemetric.family import CardRow, Family
from mnemetric.io import require_file


def _get(doc: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(part)
    return doc


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}"


def _code(x: Any) -> str:
    return "—" if x in (None, "", []) else f"`{x}`"


def table(rows: Sequence[CardRow]) -> list[str]:
    """The Markdown table of the rows: metric, value (4 decimals), 95% interval, n."""
    out = ["| metric | value | 95% interval | n |", "|---|---|---|---|"]
    for r in rows:
        ci = "—" if r.low is None or r.high is None else f"[{_fmt(r.low)}, {_fmt(r.high)}]"
        out.append(f"| {r.label} | {_fmt(r.value)} | {ci} | {'—' if r.n is None else r.n} |")
    return out


def custody_lines(run: Mapping[str, Any], outputs: Mapping[str, Any] | None, judged_path: str) -> list[str]:
    """The run manifest's custody facts, one bullet each, and official_equivalence with its reasons."""
    v, s, m, r, j = (run.get(k) or {} for k in ("variant", "suite", "memory", "reader", "judge"))
    gate = run.get("official_equivalence") or {}
    judged_sha = _get(outputs, "files", judged_path, "sha256")
    lines = [
        f"- dataset: {_code(v.get('name'))} ({v.get('source')}{', ' + str(v.get('repo')) if v.get('repo') else ''}"
        f"{' @ ' + str(v.get('revision')) if v.get('revision') else ''}, file {_code(v.get('file'))}), sha256 "
        f"{_code(v.get('sha256'))} ({'verified' if v.get('sha256_verified') else 'NOT verified'})",
        f"- suite: {_code(s.get('name'))}, {s.get('size')} questions, id-list sha256 {_code(s.get('ids_sha256'))}",
        f"- memory system: {_code(m.get('name'))}, code fingerprint {_code(m.get('fingerprint_sha256'))}, "
        f"config sha256 {_code(m.get('config_sha256'))}",
        f"- reader: {_code(r.get('name'))}, model {_code(r.get('requested_model'))}, returned "
        f"{_code(', '.join(r.get('resolved_models') or []))}",
        f"- judge: {_code(j.get('name'))}, snapshot(s) {_code(', '.join(j.get('resolved_models') or []))}, "
        f"prompt-set sha256 {_code(j.get('prompt_set_sha256'))}, endpoint(s) {_code(', '.join(j.get('endpoints') or []))}",
        f"- judged file: {_code(judged_path)}, sha256 {_code(judged_sha) if judged_sha else 'not in the custody manifest'}",
        f"- scoring profile {_code(_get(run, 'scoring', 'profile'))}; Mnemetric {run.get('mnemetric_version')}; "
        f"{_get(run, 'counts', 'judged')} of {_get(run, 'counts', 'questions')} judged, "
        f"{_get(run, 'counts', 'failed')} failed",
        f"- official_equivalence: **{str(gate.get('value')).lower()}**",
    ]
    return lines + [f"  - {reason}" for reason in gate.get("reasons") or []]


def render_card(family: Family, run: Mapping[str, Any], docs: Mapping[str, Mapping[str, Any] | None],
                outputs: Mapping[str, Any] | None, judged_path: str) -> str:
    """The card's Markdown (module docstring); ``docs``: the family card's role -> metrics document (or None)."""
    if family.card is None:
        raise ConfigError("benchmark", f"{family.display_name} has no result card",
                          fix="choose a benchmark whose family defines a card (Family.card)")
    v, s, m = (run.get(k) or {} for k in ("variant", "suite", "memory"))
    rows = list(family.card.rows(docs))
    lines = [f"#### {run.get('benchmark') or family.display_name} result: memory `{m.get('name')}` on "
             f"`{v.get('name')}` (suite `{s.get('name')}`)", ""]
    lines += table(rows) if rows else [family.card.empty]
    lines += ["", *custody_lines(run, outputs, judged_path)]
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


def card_from_files(family: Family, judged_path: str, *, run: str | Path | None = None,
                    outputs: str | Path | None = "data/custody/outputs.sha256.json",
                    overrides: Mapping[str, str | Path] | None = None, root: str | Path = ".") -> str | None:
    """The family's card from the files of the run (None when its run manifest does not exist)."""
    manifest = Path(root) / (run if run is not None else family.run_manifest or "")
    if run is None and (family.run_manifest is None or not manifest.is_file()):
        return None
    docs = read_card_inputs(family, overrides, root)
    out_path = Path(root) / outputs if outputs is not None else None
    out_doc = read_json(out_path) if out_path is not None and out_path.is_file() else None
    return render_card(family, read_json(manifest), docs, out_doc, judged_path)
