"""Stage attribution: one cause per question judged wrong → metrics/detail/attribution.json.

Reads the suite's questions file, the judged file, the retrieval log and the contexts file, the
errata overlay (``errata.file``: gold disputed) and, when ``attribution.disputed`` names one, the
disputed-verdicts file (judge disputed). The causes and their precedence:
:mod:`mnemetric.longmemeval.attribution`; the file: :mod:`mnemetric.longmemeval.attribution_file`.
A diagnosis beside the numbers: no metric changes.
"""

from __future__ import annotations

from mnemetric.longmemeval.attribution_file import PATH, attribute_run, summary_rows, write_attribution
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["variant.name", "errata.file", "attribution", "paths.questions", "paths.judged", "paths.retrieval_log",
          "paths.contexts"]


def main() -> None:
    p = stage_params(PARAMS)
    sources = {"questions": p["paths.questions"], "judged": p["paths.judged"],
               "retrieval_log": p["paths.retrieval_log"], "contexts": p["paths.contexts"],
               "errata": p["errata.file"], "disputed": p["attribution"].get("disputed")}
    result = attribute_run(sources, p["variant.name"])
    write_attribution(PATH, result)
    print(f"attribution: {result.counts['wrong']} wrong question(s): "
          + ", ".join(f"{c} {n}" for c, n, _ in summary_rows(result)) + f" → {PATH}")


if __name__ == "__main__":
    run(main)
