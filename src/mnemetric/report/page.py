"""The report's one door with I/O: a family's report page from its files, written atomically.

Used by stage report and `mnemetric report` alike. The family (``Family.report``) fills the
:class:`mnemetric.report.model.Report` from its own files, with its result card
(:func:`mnemetric.custody.card.card_from_files`) shown verbatim; :func:`render_report` makes the
page. Imports no family.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError
from mnemetric.family import Family
from mnemetric.io import atomic_open
from mnemetric.params import nest
from mnemetric.report.html import render_report

OUTPUTS = "data/custody/outputs.sha256.json"


def write_family_report(family: Family, p: Mapping[str, Any], out: Path, *, baseline: str | None = None,
                        **options: Any) -> Any:
    """Fill the family's report from the flat params ``p`` (its ``report_params`` at least), render,
    write ``out`` atomically; returns the report model. ``baseline`` and ``options`` go to the family
    (LongMemEval lists the flips against a baseline revision, with ``resamples`` and ``seed``)."""
    from mnemetric.custody.card import card_from_files

    if family.report is None:
        raise ConfigError("benchmark", f"{family.display_name} has no report",
                          fix="choose a benchmark whose family defines one (Family.report)")
    outputs = Path(p["paths.custody_dir"]) / "outputs.sha256.json" if "paths.custody_dir" in p else Path(OUTPUTS)
    card = card_from_files(family, nest(p), outputs=outputs) or ""
    model = family.report({k: p[k] for k in family.report_params}, card, baseline, **options)
    page = render_report(model)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(out, "w") as fh:
        fh.write(page)
    return model
