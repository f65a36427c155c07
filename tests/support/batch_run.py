"""The calls of the batch tests: N chat calls ``q0`` … ``q<N-1>`` (model "m", or ``models`` in turn; each priced
with the OpenAI batch discount), and a batch run of them: ``python -m tests.support.batch_run BASE_URL N`` (the
response cache and ledger of ``$MNEMETRIC_CACHE_DIR``; prints the outcomes' texts as one JSON line)."""

from __future__ import annotations

import json
import sys

from mnemetric.execute import ModelCall
from mnemetric.execute.batch import BatchExecutor

PRICES = {"m": {"input": 2.5, "output": 10.0, "batch_discount": 0.5},
          "n": {"input": 0.15, "output": 0.6, "batch_discount": 0.5}}


def calls(base_url: str, n: int, models: tuple[str, ...] = ("m",), **extra) -> list[ModelCall]:
    return [ModelCall.chat(role="judge", model=models[i % len(models)], messages=[{"role": "user", "content": f"q{i}"}],
                           params={"temperature": 0, "max_tokens": 10}, base_url=base_url, tag=f"q{i}", **extra)
            for i in range(n)]


def main(argv: list[str]) -> int:
    base_url, n = argv[0], int(argv[1])
    with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex:
        outcomes = ex.run(calls(base_url, n))
        print(json.dumps({"texts": [o.text for o in outcomes], "sent": ex.usage.requests_sent}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
