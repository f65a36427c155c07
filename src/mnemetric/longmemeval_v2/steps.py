"""The steps of one LongMemEval-V2 run, each from files or rows to rows: memory → read → check → assemble.

Per domain, as upstream's evaluation/harness.py run (xiaowu0162/LongMemEval-V2 at
be15ea6e995462f3391c1a610892df3f67dfa7bd; a run is ONE domain): the domain's questions in questions.jsonl
order (index = stream_index = position among them; no shuffle), their haystack lists, the memory by the
shared-haystack rule (:mod:`.harness`), the reader, then scoring — a deterministic checker gets the parsed
boxed answer (:func:`~.checkers.score_deterministic`), an LLM checker the raw and parsed answers
(:mod:`.llm_checkers`); an is_unknown answer scores 0.

* :func:`memory_step` → :class:`~.step_rows.MemoryRow` per question (with the kept items' tokens by item type,
  :func:`tokens_by_type`), and what was measured apart (:class:`Latencies`: query and hook seconds, build
  seconds, timed answers a cache served, the memory's own model calls; an untracked sidecar, summed up in the
  committed metrics/v2-latency.json by :mod:`.latency`, never in a reproducible file).
* :func:`read_step` → :class:`~.step_rows.ReadRow`: the reader's calls go to the run's executor.
* :func:`check_step` → :class:`~.step_rows.CheckRow`: deterministic checkers here, LLM checkers' calls to the
  run's executor.
* :func:`assemble` → upstream's per_question rows (:mod:`.per_question`; ``timestamp_utc`` is written as "" —
  no clock times in our outputs). Mnemetric extra fields after upstream's keys: ``reader_request_sha256`` /
  ``reader_params_sent`` and ``checker_request_sha256`` / ``checker_params_sent`` when a request was made
  (:data:`EVIDENCE_KEYS`), then ``failed`` where upstream would abort.

The DVC stages v2_memory, v2_read, v2_check and v2_metrics run one step each with the files between them;
:func:`mnemetric.longmemeval_v2.run.run_v2` runs them all in one process with one executor.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.execute import Executor
from mnemetric.io import sha256_bytes, write_json_atomic
from mnemetric.llm.tally import COUNTS, CallTally, tallying
from mnemetric.longmemeval_v2.categories import CATEGORY_MAP
from mnemetric.longmemeval_v2.checkers import LLM_CHECKERS, extract_boxed_answer, is_unknown, parse_eval_function
from mnemetric.longmemeval_v2.checkers import score_deterministic
from mnemetric.longmemeval_v2.harness import MemoryQuestion, run_memory
from mnemetric.longmemeval_v2.haystacks import read_haystack
from mnemetric.longmemeval_v2.llm_checkers import CheckCase
from mnemetric.longmemeval_v2.memory import MemoryFactory, is_shared
from mnemetric.longmemeval_v2.per_question import FAILED, UPSTREAM_KEYS, PerQuestionRow
from mnemetric.longmemeval_v2.questions import Question, iter_questions
from mnemetric.longmemeval_v2.reader import ReaderInput
from mnemetric.longmemeval_v2.selection import Selection
from mnemetric.longmemeval_v2.requests import reader_log_messages
from mnemetric.longmemeval_v2.step_rows import CheckRow, MemoryRow, ReadRow
from mnemetric.longmemeval_v2.tokens import TokenCounter
from mnemetric.longmemeval_v2.trajectories import iter_trajectories
from mnemetric.longmemeval_v2.upstream_text import ReaderTexts
from mnemetric.longmemeval_v2.validate import QUESTIONS_FILE, TRAJECTORIES_FILE

EVIDENCE_KEYS = ("reader_request_sha256", "reader_params_sent", "checker_request_sha256", "checker_params_sent")


def domain_questions(root: Path, domain: str) -> list[Question]:
    return [q for q in iter_questions(root / QUESTIONS_FILE) if q.domain == domain]


def chosen_questions(root: Path, domains: Sequence[str], select: Selection | None = None) -> dict[str, list[Question]]:
    """domain → the questions one run asks (questions.jsonl order; ``select``: a subset, :mod:`.selection`)."""
    per_domain = {d: domain_questions(root, d) for d in domains}
    if select is not None:
        select.check_known({q.id for qs in per_domain.values() for q in qs}, str(root / QUESTIONS_FILE))
        per_domain = {d: select.pick(qs) for d, qs in per_domain.items()}
    return per_domain


def _identity(q: Question, i: int, haystack_ids: Sequence[str], image: str | None) -> dict[str, Any]:
    name = parse_eval_function(q.eval_function, file=QUESTIONS_FILE, record=q.id)[0]
    return {"index": i, "stream_index": i, "question_id": q.id, "question_type": q.question_type,
            "category": CATEGORY_MAP[q.question_type], "is_abstention_problem": name == "llm_abstention_checker",
            "eval_function": q.eval_function, "question_text": q.question, "question_image": image,
            "haystack_ids": list(haystack_ids)}


@dataclass
class Latencies:
    """What the memory step measured (module docstring; untracked): per (domain, question id) the seconds of
    the memory query and the post-query hook; beside them the seconds building the memory took
    (``build``), how many timed model answers a cache served (``cache_served``), and per domain what the
    memory's own model calls cost (``memory_side``: :class:`mnemetric.llm.tally.CallTally`)."""

    seconds: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    build: dict[tuple[str, str], float] = field(default_factory=dict)
    cache_served: dict[tuple[str, str], int] = field(default_factory=dict)
    memory_side: dict[str, CallTally] = field(default_factory=dict)
    memory_cost: dict[str, Any] | None = None
    """A UsesModelProxy memory's requests through the model proxy (:func:`mnemetric.llm.memory_cost.memory_cost_record`:
    per system and phase, only what the inputs decide); None for any other memory. Not in the sidecar."""

    def of(self, domain: str, question_id: str) -> tuple[float, float] | None:
        return self.seconds.get((domain, question_id))

    def write(self, path: str | Path, memory_sha256: str) -> None:
        """The sidecar: the memory file's sha256 (so a stale sidecar is never paired with other rows) and the rows."""
        rows = [[d, q, a, b, self.build.get((d, q), 0.0), self.cache_served.get((d, q), 0)]
                for (d, q), (a, b) in self.seconds.items()]
        write_json_atomic(path, {"memory_sha256": memory_sha256, "seconds": rows,
                                 "memory_side": {d: t.to_record() for d, t in self.memory_side.items()}})

    @classmethod
    def read_sidecar(cls, path: str | Path) -> tuple[str, Latencies]:
        """(the memory file's sha256 it belongs to, the measurements) of a sidecar given by name (`mnemetric merge
        --latency`): a missing or malformed file is an InputError naming it and the field."""
        from mnemetric.records import Fields, read_json_file

        fix = "give the latency.json that stage v2_memory wrote for this shard (<paths.v2_runs>/latency.json)"
        f = Fields.of(read_json_file(path, missing_fix=fix, fix=fix), file=str(path), record="<file>", fix=fix)
        sha = f.string("memory_sha256")
        out = cls()
        for i, row in enumerate(f.array("seconds")):
            ok = (isinstance(row, list) and 4 <= len(row) <= 6 and all(isinstance(v, str) for v in row[:2])
                  and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row[2:]))
            if not ok:
                raise f.error(f"seconds[{i}]", f"expected [domain, question_id, query s, post-query s, build s, "
                                               f"cache served], got {row!r}"[:200])
            d, q, a, b, *rest = row
            if (d, q) in out.seconds:
                raise f.error(f"seconds[{i}]", f"{d}/{q} twice")
            out.seconds[d, q] = (float(a), float(b))
            out.build[d, q] = float(rest[0]) if rest else 0.0
            out.cache_served[d, q] = int(rest[1]) if len(rest) > 1 else 0
        side = f.within("memory_side")
        for d in side.raw:
            block = side.at(d)
            for name in COUNTS:
                block.count(name)
            block.amount("usd")
        out.memory_side = {d: CallTally.from_record(side.at(d).raw) for d in side.raw}
        return sha, out

    @classmethod
    def join(cls, parts: Sequence[Latencies], order: Sequence[tuple[str, str]]) -> Latencies:
        """The measurements of disjoint question shards as one (`mnemetric merge`): each question's seconds in
        ``order`` (the merged rows' (domain, question id)), each domain's memory-side calls added up — the calls the
        shards made: a memory shared by a domain's questions was built by every shard, so its build's calls are in
        each shard's tally (these are measurements, as the seconds are; the tracked memory-cost record counts such
        a build once). Every question of ``order`` must be measured in exactly one part (the caller checks)."""
        out = cls()
        for key in order:
            owner = next(p for p in parts if key in p.seconds)
            out.seconds[key] = owner.seconds[key]
            out.build[key] = owner.build.get(key, 0.0)
            out.cache_served[key] = owner.cache_served.get(key, 0)
        for domain in dict.fromkeys(d for d, _ in order):
            total = CallTally()
            for p in parts:
                if domain in p.memory_side:
                    total.add(p.memory_side[domain])
            out.memory_side[domain] = total
        return out

    @classmethod
    def read(cls, path: str | Path, memory_sha256: str) -> Latencies | None:
        """The sidecar if it was written with the memory file of ``memory_sha256``; else None."""
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(raw, dict) or raw.get("memory_sha256") != memory_sha256:
            return None
        out = cls()
        for d, q, a, b, *rest in raw.get("seconds", []):
            out.seconds[d, q] = (float(a), float(b))
            out.build[d, q] = float(rest[0]) if rest else 0.0
            out.cache_served[d, q] = int(rest[1]) if len(rest) > 1 else 0
        out.memory_side = {d: CallTally.from_record(t) for d, t in (raw.get("memory_side") or {}).items()}
        return out


def tokens_by_type(items: Sequence[Mapping[str, str]], counter: TokenCounter) -> dict[str, dict[str, int]]:
    """{text, image: {items, tokens}}: the kept items of each type and what the counter gives them alone (the
    message template is counted with each type, so the two need not sum to the context's count)."""
    out = {}
    for kind in ("text", "image"):
        mine = [dict(i) for i in items if i.get("type") == kind]
        out[kind] = {"items": len(mine), "tokens": counter.count(mine) if mine else 0}
    return out


def memory_step(root: Path, haystack: Path, domains: Sequence[str], factory: MemoryFactory, *, counter: TokenCounter,
                max_tokens: int, system: str, images_on: bool = True,
                select: Selection | None = None, mapper: Any = None,
                keep: Callable[[str], bool] | None = None) -> tuple[list[MemoryRow], Latencies]:
    """Every domain's memory rows (module docstring). ``images_on`` False: a question image that is not on disk
    is left out (the memory and the reader get the question text alone; not official). ``select``: only these
    questions (:mod:`.selection`; index = position among the chosen ones). ``mapper``: the run's executor, whose
    workers build per-question memories in parallel when ``executor.workers`` > 1 or its map is remote (Dask;
    :func:`.harness.run_memory`; the memory's calls there are tallied into ``memory_side`` as here).
    ``keep``: a question shard (question id → asked?): only those questions are asked, each keeping the index and
    the shared-haystack decision of the run without ``keep`` (:mod:`.shards`). A memory that declares
    UsesModelProxy (upstream's rag, agentrunbook_r) gets the loopback model proxy over ``mapper`` for the whole
    step (:func:`mnemetric.llm.memory_cost.serving`): its requests then spend the run's budget, are cached and
    counted in ``memory_side``; ``Latencies.memory_cost`` is then the proxy's record per (system, phase) and this
    run's facts (sent, replayed, hit rate) go to stderr and the run log."""
    from mnemetric.llm.memory_cost import finish_memory_run, memory_cost_record, serving

    proxied = mapper is not None and getattr(factory, "uses_model_proxy", False) is True  # a conf option says so
    with serving(proxied, mapper, None, system) as proxy:  # a UsesModelProxy memory's clients → the run's executor
        rows, latencies = _memory_rows(root, haystack, domains, factory, counter=counter, max_tokens=max_tokens,
                                       system=system, images_on=images_on, select=select, mapper=mapper, keep=keep)
    if proxy is not None:
        finish_memory_run("v2_memory", system, proxy)  # this run's facts: stderr, the run log
        latencies.memory_cost = memory_cost_record(system, proxy)
    return rows, latencies


def _memory_rows(root: Path, haystack: Path, domains: Sequence[str], factory: MemoryFactory, *, counter: TokenCounter,
                 max_tokens: int, system: str, images_on: bool, select: Selection | None, mapper: Any,
                 keep: Callable[[str], bool] | None) -> tuple[list[MemoryRow], Latencies]:
    rows, latencies = [], Latencies()
    lists = read_haystack(haystack)
    per_domain = chosen_questions(root, domains, select)
    for domain in domains:
        chosen = per_domain[domain]
        shared = is_shared([lists[q.id] for q in chosen])
        picked = [(i, q) for i, q in enumerate(chosen) if keep is None or keep(q.id)]
        positions, questions = [i for i, _ in picked], [q for _, q in picked]
        trajectories = {t.id: t for t in iter_trajectories(root / TRAJECTORIES_FILE)}
        images = [None if q.image is None or not (images_on or (root / q.image).exists()) else str(root / q.image)
                  for q in questions]
        mqs = [MemoryQuestion(q.id, q.question, img, lists[q.id]) for q, img in zip(questions, images)]
        with tallying() as side:  # the memory's own model calls: build, queries and hooks (workers' merged in)
            outcomes = list(run_memory(factory, mqs, trajectories, system=system, counter=counter,
                                       max_tokens=max_tokens, mapper=mapper, shared=shared))
        latencies.memory_side[domain] = side
        for i, q, img, m in zip(positions, questions, images, outcomes):
            rows.append(MemoryRow(domain, _identity(q, i, lists[q.id], img), tuple(m.memory_context),
                                  m.memory_post_query_metadata, m.memory_context_original_token_count,
                                  m.memory_context_token_count, tokens_by_type(m.memory_context, counter)))
            latencies.seconds[domain, q.id] = (m.memory_query_duration_seconds, m.memory_post_query_duration_seconds)
            latencies.build[domain, q.id] = m.memory_build_seconds
            latencies.cache_served[domain, q.id] = m.timed_cache_served
    return rows, latencies


def read_step(memory: Sequence[MemoryRow], reader: Any, executor: Executor | None,
              texts: ReaderTexts | None) -> list[ReadRow]:
    """The reader's row per question; ``texts`` (None: prompt_messages logged empty) for the prompt log."""
    items = [ReaderInput(m.domain, [dict(i) for i in m.memory_context], m.identity["question_text"],
                         m.identity["question_image"]) for m in memory]
    replies = reader.answer_all(items, executor)
    out = []
    for m, item, reply in zip(memory, items, replies):
        prompt = (reader_log_messages(m.domain, item.memory_context, item.question_text, item.question_image, texts)
                  if texts and not reply.failed else [])
        out.append(ReadRow(m.domain, m.question_id, reply.response_raw, dict(reply.usage), tuple(prompt),
                           reply.text_source, reply.request_sha256, reply.params_sent, reply.failed))
    return out


def _gold(root: Path, memory: Sequence[MemoryRow]) -> dict[tuple[str, str], Question]:
    wanted = {(m.domain, m.question_id) for m in memory}
    found = {(q.domain, q.id): q for q in iter_questions(root / QUESTIONS_FILE) if (q.domain, q.id) in wanted}
    missing = sorted(wanted - set(found))
    if missing:
        raise InputError(str(root / QUESTIONS_FILE), missing[0][1], "id",
                         "the memory step has this question but questions.jsonl no longer does",
                         fix="rerun the V2 steps from v2_memory (dvc repro)")
    return found


def check_step(root: Path, memory: Sequence[MemoryRow], read: Sequence[ReadRow], checker: Any,
               executor: Executor | None) -> list[CheckRow]:
    """Score each read answer (module docstring); gold answers from ``root``'s questions.jsonl."""
    _same_questions(memory, read, "read")
    gold = _gold(root, memory)
    pending: list[tuple[int, CheckCase]] = []
    rows: list[CheckRow | None] = []
    for m, r in zip(memory, read):
        q = gold[m.domain, m.question_id]
        name, options = parse_eval_function(q.eval_function, file=QUESTIONS_FILE, record=q.id)
        if r.failed:
            rows.append(CheckRow(m.domain, q.id, name, None, None, None, failed=r.failed))
            continue
        raw = r.response_raw or ""
        parsed = extract_boxed_answer(raw)
        unknown = is_unknown(parsed)
        if name in LLM_CHECKERS:
            pending.append((len(rows), CheckCase(name, q.question_type, q.question, q.answer, raw, parsed)))
            rows.append(CheckRow(m.domain, q.id, name, parsed, unknown, None))
            continue
        ok = bool(score_deterministic(name, options, parsed, q.answer)) and not unknown
        rows.append(CheckRow(m.domain, q.id, name, parsed, unknown, ok))
    verdicts = checker.check_all([c for _, c in pending], executor) if pending else []
    for (i, _), v in zip(pending, verdicts):
        row = rows[i]
        ok = None if v.failed else bool(v.verdict) and not row.is_unknown
        rows[i] = CheckRow(row.domain, row.question_id, row.checker, row.response_parsed_boxed, row.is_unknown, ok,
                           v.request_sha256, v.params_sent, v.failed, getattr(v, "reason", None))
    return [r for r in rows if r is not None]


def _same_questions(memory: Sequence[Any], other: Sequence[Any], what: str) -> None:
    a = [(m.domain, m.question_id) for m in memory]
    b = [(r.domain, r.question_id) for r in other]
    if a != b:
        diff = next((x for x, y in zip(a, b) if x != y), (a[len(b)] if len(a) > len(b) else b[len(a)]))
        raise InputError(f"the {what} step's rows", diff[1], "question_id",
                         f"the {what} step does not hold the memory step's questions in order",
                         fix="rerun the V2 steps from the first that changed (dvc repro)")


def assemble(root: Path, memory: Sequence[MemoryRow], read: Sequence[ReadRow], check: Sequence[CheckRow],
             latencies: Latencies | None = None) -> dict[str, list[PerQuestionRow]]:
    """upstream's per_question rows per domain (module docstring). Without ``latencies`` (the measurement is
    not at hand) durations are 0.0: only untracked outputs carry them."""
    _same_questions(memory, read, "read")
    _same_questions(memory, check, "check")
    gold = _gold(root, memory)
    out: dict[str, list[PerQuestionRow]] = {}
    for m, r, c in zip(memory, read, check):
        seconds = (latencies.of(m.domain, m.question_id) if latencies else None) or (0.0, 0.0)
        raw: dict[str, Any] = {**m.identity, "memory_context": [dict(i) for i in m.memory_context],
                               "memory_query_duration_seconds": seconds[0],
                               "memory_post_query_duration_seconds": seconds[1],
                               "memory_post_query_metadata": m.memory_post_query_metadata,
                               "memory_context_original_token_count": m.memory_context_original_token_count,
                               "memory_context_token_count": m.memory_context_token_count,
                               "memory_context_was_truncated":
                                   m.memory_context_original_token_count > m.memory_context_token_count}
        failed = r.failed or c.failed
        rest = None if failed else {
            "prompt_messages": list(r.prompt_messages), "answer_gold": gold[m.domain, m.question_id].answer,
            "response_raw": r.response_raw, "response_parsed_boxed": c.response_parsed_boxed,
            "is_unknown": c.is_unknown, "score": 1.0 if c.score_bool else 0.0, "score_bool": c.score_bool,
            "usage": dict(r.usage), "timestamp_utc": ""}
        for key in UPSTREAM_KEYS:
            raw.setdefault(key, None if rest is None else rest.get(key))
        for prefix, row in (("reader", r), ("checker", c)):
            if row.request_sha256 is not None:
                raw[f"{prefix}_request_sha256"] = row.request_sha256
                raw[f"{prefix}_params_sent"] = dict(row.params_sent or {})
        if failed:
            raw[FAILED] = failed
        rows = out.setdefault(m.domain, [])
        rows.append(PerQuestionRow.from_record(raw, file="<v2 run>", line=len(rows) + 1))
    return out


def image_files(memory: Sequence[MemoryRow], root: str | Path) -> tuple[str, ...]:
    """The files under ``root`` (relative paths) that the reader will send as images: question images and image
    memory items (for the custody check of the read step)."""
    base, out = Path(root).resolve(), {}
    paths = [m.identity["question_image"] for m in memory] + [i["value"] for m in memory for i in m.memory_context
                                                               if i.get("type") == "image"]
    for p in paths:
        if p:
            try:
                out[Path(p).resolve().relative_to(base).as_posix()] = None
            except ValueError:
                continue
    return tuple(out)


def memory_file_sha256(path: str | Path) -> str:
    return sha256_bytes(Path(path).read_bytes())


def params_sent_sets(rows: Sequence[ReadRow | CheckRow]) -> list[dict[str, Any]]:
    """The distinct parameter sets the rows' requests were sent with, in first-use order (for run-v2.json)."""
    seen: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r.params_sent is not None:
            seen.setdefault(json.dumps(r.params_sent, sort_keys=True), dict(r.params_sent))
    return list(seen.values())
