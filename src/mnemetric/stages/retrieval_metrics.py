"""Stage retrieval_metrics: score the retrieval log → headline, detail and a recall@k plot file.

* ``paths.metrics_retrieval`` (metrics/retrieval.json, a DVC metric): the headline
  (``retrieval_headline``: n and recall_all@5/10, ndcg_any@5/10 per rule and level);
* metrics/detail/retrieval.json (a plain output): every mean, per type, with intervals;
* ``paths.plot_recall``: rows {granularity, k, recall} for both levels (template recall_curve).
"""

from __future__ import annotations

from mnemetric.longmemeval.retrieval_log import score_retrieval_log
from pathlib import Path

from mnemetric.fingerprint import read_fingerprint
from mnemetric.errors import ConfigError
from mnemetric.io import write_json_atomic
from mnemetric.params import stage_params
from mnemetric.longmemeval.scoring.retrieval_report import recall_curve, retrieval_headline, retrieval_metrics
from mnemetric.stages import run

PARAMS = ["scoring", "memory.name", "variant.name", "suite.name", "retrieval.granularity",
          "paths.retrieval_log", "paths.metrics_retrieval", "paths.plot_recall", "paths.fingerprints"]


def detail_path(metrics_retrieval: str | Path) -> Path:
    """metrics/retrieval.json → metrics/detail/retrieval.json."""
    path = Path(metrics_retrieval)
    return path.parent / "detail" / path.name


def main() -> None:
    p = stage_params(PARAMS)
    s = p["scoring"]
    check_scoring(s)
    scored = score_retrieval_log(p["paths.retrieval_log"], p["retrieval.granularity"], s["name"], ks=s["ks"])
    rules = retrieval_metrics(scored, s["bootstrap"]["resamples"], s["bootstrap"]["seed"])
    metrics = {
        "profile": s["name"], "official_equivalence": scored["official_equivalence"],
        "memory": p["memory.name"], "variant": p["variant.name"], "suite": p["suite.name"],
        "memory_fingerprint": read_fingerprint(p["paths.fingerprints"], "memory"),
        "granularity": scored["granularity"],
        "bootstrap": {"resamples": s["bootstrap"]["resamples"], "seed": s["bootstrap"]["seed"], "level": 0.95,
                      "note": "percentile bootstrap of each mean over questions; a Mnemetric addition, "
                              "not an upstream metric"},
        **rules,
    }
    names = {k: metrics[k] for k in ("profile", "official_equivalence", "memory", "variant", "suite", "granularity")}
    write_json_atomic(detail_path(p["paths.metrics_retrieval"]), metrics)
    write_json_atomic(p["paths.metrics_retrieval"], {**names, **retrieval_headline(rules)})
    metric = "recall_all" if scored["official_equivalence"] else "recall"
    write_json_atomic(p["paths.plot_recall"], recall_curve(rules["exclude_abs"], metric))
    main_rule = rules["exclude_abs"]
    print(f"retrieval_metrics: {s['name']} n={main_rule['n']} → {p['paths.metrics_retrieval']}")


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
