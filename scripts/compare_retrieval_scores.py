"""Compare the numbers of two folders written by scripts/behaviour_outputs.sh across the score-retrieval
layout change (issue 8): the old file held `per_question` and `aggregate` at the top level; the new
headline holds the headline means, its detail (detail/<name>) every mean and the per-question values. Every per-question
value and every mean must be equal (exactly, as floats).

    python scripts/compare_retrieval_scores.py OLD_DIR NEW_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def numbers(folder: Path, name: str) -> tuple[dict, dict]:
    """(per_question, {rule: means}) of one score file, whichever layout it has."""
    top = json.loads((folder / name).read_text())
    if "aggregate" in top:
        return top["per_question"], top["aggregate"]
    detail = json.loads((folder / "detail" / name).read_text())
    rules = ("exclude_abs", "exclude_abs_and_no_user_target")
    # the detail adds the rule's wording, intervals and per-type means; the rest are the old means
    means = {r: {k: v for k, v in detail[r].items() if k not in ("rule", "ci95", "per_type")} for r in rules}
    return detail["per_question"], means


def main(old: str, new: str) -> int:
    names = sorted(p.name for p in Path(old).glob("score_*.json"))
    bad = 0
    for name in names:
        (pq_old, agg_old), (pq_new, agg_new) = numbers(Path(old), name), numbers(Path(new), name)
        same_pq, same_agg = pq_old == pq_new, agg_old == agg_new
        bad += not (same_pq and same_agg)
        print(f"{name}: per-question {'equal' if same_pq else 'DIFFER'} ({len(pq_old)}), "
              f"means {'equal' if same_agg else 'DIFFER'}")
    print(f"{len(names)} files, {bad} with differences")
    return 1 if bad or not names else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
