#!/usr/bin/env bash
# Behaviour check for refactors (issue 8's "numbers unchanged"): run the library's file-level commands on a
# synthetic S-scale LongMemEval file with the code under SRC, writing every output under OUT. Run it once on
# the old tree and once on the new one, then `diff -r OUT_OLD OUT_NEW` (sha256sums.txt lists every file).
#   scripts/behaviour_outputs.sh SRC OUT [N_QUESTIONS] [SESSIONS]
# SRC is a checkout's src/ folder (e.g. a `git worktree add /tmp/old <rev>`'s /tmp/old/src); the venv's
# mnemetric is put in front of it with PYTHONPATH, so the same interpreter runs both trees.
set -euo pipefail
SRC=$(cd "$1" && pwd); OUT=$2; N=${3:-500}; S=${4:-48}
PY=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
cd "$OUT"
m() { PYTHONPATH="$SRC" "$PY" -m mnemetric.cli "$@"; }
m sample --synthetic "$N" --sessions "$S" --out synthetic.json
for adapter in session-v3 legacy-v2; do
  m adapt synthetic.json --adapter "$adapter" --out "adapted_${adapter}.jsonl"
done
for memory in bm25-upstream bm25 oracle full-context none; do
  for g in session turn; do
    m retrieve synthetic.json --memory "$memory" --granularity "$g" --conf /nonexistent \
      --out "log_${memory}_${g}.jsonl" --contexts "contexts_${memory}_${g}.jsonl"
    for profile in longmemeval-session-upstream-v1 mnemetric-historical; do
      m score-retrieval "log_${memory}_${g}.jsonl" --granularity "$g" --profile "$profile" \
        --reference synthetic.json --out "score_${memory}_${g}_${profile}.json"
    done
  done
done
find . -type f ! -name sha256sums.txt | sort | xargs sha256sum > sha256sums.txt
