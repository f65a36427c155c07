"""What a memory library spent through the model proxy, per (memory system, phase) (generic).

Two views, kept apart because only one of them is decided by the inputs:

* :meth:`ProxyLedger.work` — **tracked** (``metrics/detail/memory_cost.json``): per system and phase
  ("setup", "ingest", "query") the library's requests (chat / embeddings), and the cost of the work as
  :class:`~mnemetric.llm.budget.WorkUsage` lays it out (responses, tokens, dollars per model: the same on
  a cold and a warm run), and the replay verdict (:func:`volatile_kinds`);
* :meth:`ProxyLedger.this_run` — **untracked** (the run log, the terminal, a sidecar under
  ``.mnemetric/``): what THIS run sent, how many library requests were replayed from the response cache
  (``hit_rate``), the dollars paid and the seconds each phase took.

Replay (issue 18 item 4): a request whose prompt holds the clock (today's date, the current Unix time) or a
random id (a version-4 UUID) cannot be answered from the cache by a rerun. Every request is scanned;
a run that saw any of them is marked ``replayable: false`` with the kinds found (never the values, which
change from run to run), and its measured hit rate says how much a rerun really replayed.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from mnemetric.llm.budget import UsageStats, WorkUsage

PHASES = ("setup", "ingest", "query")
"""``setup``: requests outside any attribution (a library warming up); ``ingest``, ``query``: the harness's."""
KINDS = ("chat", "embeddings")
_UUID4 = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\b", re.IGNORECASE)
_UNIX = re.compile(r"(?<![0-9.])1[0-9]{9}(?:\.[0-9]+)?(?![0-9])")
_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d/%m/%Y", "%m/%d/%Y", "%B %d, %Y", "%b %d, %Y", "%d %B %Y")
CLOCK_DATE = "clock: a prompt holds today's date"
CLOCK_TIME = "clock: a prompt holds the current Unix time"
RANDOM_ID = "random id: a prompt holds a version-4 UUID"


def volatile_kinds(text: str, now: float | None = None) -> set[str]:
    """Which run-dependent values ``text`` (a request body) holds: :data:`CLOCK_DATE`, :data:`CLOCK_TIME`,
    :data:`RANDOM_ID` (module docstring)."""
    now = time.time() if now is None else now
    found: set[str] = set()
    days = {datetime.fromtimestamp(now, tz).strftime(f) for tz in (timezone.utc, None) for f in _DATE_FORMATS}
    if any(d in text for d in days):
        found.add(CLOCK_DATE)
    if any(abs(float(m.group(0)) - now) < 2 * 86400 for m in _UNIX.finditer(text)):
        found.add(CLOCK_TIME)
    if _UUID4.search(text):
        found.add(RANDOM_ID)
    return found


@dataclass
class PhaseCost:
    """The counters of one (system, phase)."""

    requests: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    """Requests the library made, per endpoint kind (tracked)."""
    work: WorkUsage = field(default_factory=WorkUsage)
    """The cost of the work (tracked)."""
    sent: int = 0
    """Requests sent to the real endpoint this run (a library request may need none, one or several)."""
    replayed: int = 0
    """Library requests answered with nothing sent (all from the response cache) this run."""
    failed: int = 0
    usd_paid: float = 0.0
    seconds: float = 0.0
    """Wall-clock seconds spent inside the harness's attribution blocks of this phase (this run)."""


def _sums(work: WorkUsage) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {pair: (n, p, c) for pair, (n, p, c) in work._sums.items()}  # noqa: SLF001 (same layer)


@dataclass
class Snapshot:
    """The executor's counters before one request (to take the request's share after it)."""

    sent: int
    usd: float
    sums: dict[tuple[str, str], tuple[int, int, int]]

    @classmethod
    def of(cls, usage: UsageStats) -> Snapshot:
        return cls(usage.requests_sent, usage.usd, _sums(usage.work))


class ProxyLedger:
    """Per (system, phase) counters; fed by the proxy, one request at a time (the proxy serialises them)."""

    def __init__(self) -> None:
        self.phases: dict[tuple[str, str], PhaseCost] = {}
        self.volatile: set[str] = set()

    def phase(self, system: str, phase: str) -> PhaseCost:
        return self.phases.setdefault((system, phase), PhaseCost())

    def record(self, system: str, phase: str, kind: str, before: Snapshot, usage: UsageStats, *,
               ok: bool, body_text: str) -> tuple[int, int]:
        """Count one library request from the executor's counters before and now; returns its (prompt,
        completion) tokens of work (what the proxy reports in the reply's ``usage``)."""
        cost = self.phase(system, phase)
        cost.requests[kind] += 1
        sent = usage.requests_sent - before.sent
        cost.sent += sent
        cost.replayed += ok and sent == 0
        cost.failed += not ok
        cost.usd_paid += usage.usd - before.usd
        prompt = completion = 0
        for pair, (n, p, c) in _sums(usage.work).items():
            n0, p0, c0 = before.sums.get(pair, (0, 0, 0))
            if (n - n0, p - p0, c - c0) != (0, 0, 0):
                cost.work.add(pair[0], pair[1], p - p0, c - c0, usage.work._prices.get(pair), n - n0)  # noqa: SLF001
                prompt, completion = prompt + p - p0, completion + c - c0
        self.volatile |= volatile_kinds(body_text)
        return prompt, completion

    def add_seconds(self, system: str, phase: str, seconds: float) -> None:
        self.phase(system, phase).seconds += seconds

    @property
    def requests(self) -> int:
        return sum(sum(c.requests.values()) for c in self.phases.values())

    @property
    def sent(self) -> int:
        return sum(c.sent for c in self.phases.values())

    def _systems(self) -> list[str]:
        return sorted({s for s, _ in self.phases})

    def replay(self) -> dict[str, Any]:
        """``{replayable, volatile}``: whether a rerun can be answered from the cache (module docstring)."""
        return {"replayable": not self.volatile, "volatile": sorted(self.volatile)}

    def work(self) -> dict[str, Any]:
        """The tracked view: ``{replay, systems: {name: {phase: {requests: {chat, embeddings}, usage}}}}``,
        keys in a fixed order, phases in :data:`PHASES` order, only what the inputs decide."""
        systems: dict[str, Any] = {}
        for name in self._systems():
            systems[name] = {ph: {"requests": dict(c.requests), "usage": c.work.to_dict()}
                             for ph in PHASES if (c := self.phases.get((name, ph))) is not None}
        return {**self.replay(), "systems": systems}

    def this_run(self) -> dict[str, Any]:
        """The untracked view (this run's facts): per system and phase ``requests, sent, replayed, hit_rate,
        failed, usd_paid, seconds``; plus the totals and the replay verdict."""
        systems: dict[str, Any] = {}
        for name in self._systems():
            systems[name] = {ph: _run_block(c) for ph in PHASES if (c := self.phases.get((name, ph))) is not None}
        total = PhaseCost()
        for c in self.phases.values():
            for k in KINDS:
                total.requests[k] += c.requests[k]
            total.sent += c.sent
            total.replayed += c.replayed
            total.failed += c.failed
            total.usd_paid += c.usd_paid
            total.seconds += c.seconds
        return {**self.replay(), "total": _run_block(total), "systems": systems}


def _run_block(c: PhaseCost) -> dict[str, Any]:
    n = sum(c.requests.values())
    return {"requests": n, "sent": c.sent, "replayed": c.replayed, "hit_rate": (c.replayed / n) if n else None,
            "failed": c.failed, "usd_paid": c.usd_paid, "seconds": round(c.seconds, 3)}
