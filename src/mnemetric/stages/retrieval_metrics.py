"""Stage retrieval_metrics: score the retrieval log → headline, detail and a recall@k plot file.

* ``paths.metrics_retrieval`` (metrics/retrieval.json, a DVC metric): the headline
  (``retrieval_headline``: n and recall_all@5/10, ndcg_any@5/10 per rule and level);
* metrics/detail/retrieval.json (a plain output): every mean, per type, with intervals;
* ``paths.plot_recall``: rows {granularity, k, recall} for both levels (template recall_curve).

The work is ``mnemetric.longmemeval.scoring.score_retrieval.write_retrieval_scores`` (the one path
`mnemetric score-retrieval` takes too).
"""

from __future__ import annotations

from mnemetric.errors import ConfigError
from mnemetric.fingerprint import read_fingerprint
from mnemetric.longmemeval.scoring.score_retrieval import detail_path, write_retrieval_scores
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["scoring", "memory.name", "variant.name", "suite.name", "retrieval.granularity",
          "paths.retrieval_log", "paths.metrics_retrieval", "paths.plot_recall", "paths.fingerprints"]


def main() -> None:
    p = stage_params(PARAMS)
    s = p["scoring"]
    check_scoring(s)
    files = write_retrieval_scores(
        p["paths.retrieval_log"], granularity=p["retrieval.granularity"], profile=s["name"], ks=s["ks"],
        headline=p["paths.metrics_retrieval"], detail=detail_path(p["paths.metrics_retrieval"]),
        plot=p["paths.plot_recall"], memory=p["memory.name"], variant=p["variant.name"], suite=p["suite.name"],
        memory_fingerprint=read_fingerprint(p["paths.fingerprints"], "memory"),
        resamples=s["bootstrap"]["resamples"], seed=s["bootstrap"]["seed"])
    print(f"retrieval_metrics: {s['name']} n={files.scored.exclude_abs.n} → {p['paths.metrics_retrieval']}")


def check_scoring(s: dict) -> None:
    """Scoring params that would otherwise fail deep inside numpy."""
    ks = s.get("ks")
    if not isinstance(ks, list) or not ks or any(not isinstance(k, int) or isinstance(k, bool) or k < 1 for k in ks):
        raise ConfigError(f"params.yaml scoring.ks: expected a list of integers >= 1, got {ks!r}")
    b = s.get("bootstrap") or {}
    if not isinstance(b.get("resamples"), int) or b["resamples"] < 0 or not isinstance(b.get("seed"), int):
        raise ConfigError(f"params.yaml scoring.bootstrap: expected resamples (int >= 0, 0 = no intervals) "
                          f"and seed (int), got {b!r}")


if __name__ == "__main__":
    run(main)
