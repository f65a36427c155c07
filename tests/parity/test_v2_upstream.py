"""Differential parity with upstream LongMemEval-V2's own code, read at run time from a local checkout.

Opt in with MNEMETRIC_LONGMEMEVAL_V2_DIR=<a checkout of xiaowu0162/LongMemEval-V2 at be15ea6>; no upstream
code is in this repository. Every upstream file is verified against its pinned sha256
(upstream-v2-protocol.md §0) before its bytes are executed. Seeded random inputs, compared exactly:

* evaluation/qa_eval_metrics.py — every deterministic checker, normalization, phrase splitting, the boxed
  answer, is_unknown, score_to_bool, spec parsing, spec → score (eval_from_spec), judge-label parsing;
* evaluation/harness.py — cannot be imported here (it imports memory_modules.memory, which needs the
  openai-agents package), so its pure parts are taken out by parsing (ast) and run: aggregate_metrics, the
  scoring rule score_prediction, all_haystacks_shared, and the statements of main() that accumulate and write
  tokens / memory_context / timing, executed row by row;
* leaderboard/combine_aggregated_metrics.py — combine_metrics (its clock field dropped);
* leaderboard/compute_lafs.py — lafs, pareto_frontier, the gain and the summary object.

An upstream exception must match one of ours (a MnemetricError) and vice versa.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import sys
import types
from pathlib import Path

import pytest

from mnemetric.errors import MnemetricError
from mnemetric.longmemeval_v2 import aggregate as our_aggregate
from mnemetric.longmemeval_v2 import checkers as ours
from mnemetric.longmemeval_v2 import combine as our_combine
from mnemetric.longmemeval_v2 import lafs as our_lafs
from mnemetric.longmemeval_v2.judge_label import UnparseableJudgeReply, parse_judge_label
from mnemetric.longmemeval_v2.per_question import PerQuestionRow

from tests.longmemeval_v2.rows import TYPE_CATEGORY, row

PINS = {  # upstream-v2-protocol.md §0, at be15ea6e995462f3391c1a610892df3f67dfa7bd
    "evaluation/qa_eval_metrics.py": "f8ba659e237c4282a07a92538090ea500ce8483820b390b1d19af187c01417ac",
    "evaluation/harness.py": "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1",
    "leaderboard/combine_aggregated_metrics.py": "b3b0a6af707aeb60fe985368aa2986968a4a9a266c2fff84b21f7e3d075d26cb",
    "leaderboard/compute_lafs.py": "4670ea92ab87600e344bca7f387076b2a43f28b506d036950c10443ce2c8b8c2",
}
COUNTS: dict[str, int] = {}


def test_our_modules_name_the_same_pins():
    assert (ours.UPSTREAM_FILE, ours.UPSTREAM_SHA256) in PINS.items()
    assert (our_combine.UPSTREAM_FILE, our_combine.UPSTREAM_SHA256) in PINS.items()
    assert (our_lafs.UPSTREAM_FILE, our_lafs.UPSTREAM_SHA256) in PINS.items()
    assert (our_aggregate.UPSTREAM_FILE, our_aggregate.UPSTREAM_SHA256) in PINS.items()


@pytest.fixture(scope="module")
def checkout() -> Path:
    root = os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR")
    if not root:
        pytest.skip("set MNEMETRIC_LONGMEMEVAL_V2_DIR to a LongMemEval-V2 checkout at be15ea6 to run V2 parity checks")
    return Path(root)


def verified_source(checkout: Path, rel: str) -> bytes:
    data = (checkout / rel).read_bytes()
    assert hashlib.sha256(data).hexdigest() == PINS[rel], f"{checkout / rel} is not the pinned revision"
    return data


def load(checkout: Path, rel: str) -> types.ModuleType:
    """Execute the verified bytes of one upstream file as a module (registered: dataclasses need it)."""
    name = "_upstream_v2_" + Path(rel).stem
    module = types.ModuleType(name)
    module.__file__ = str(checkout / rel)
    sys.modules[name] = module
    exec(compile(verified_source(checkout, rel), str(checkout / rel), "exec"), module.__dict__)  # noqa: S102
    return module


@pytest.fixture(scope="module")
def qa(checkout):
    return load(checkout, "evaluation/qa_eval_metrics.py")


def outcome(fn, *args, **kwargs):
    """("ok", value) or ("error", None): only *whether* both sides raise is compared."""
    try:
        return "ok", fn(*args, **kwargs)
    except MnemetricError:
        return "error", None
    except (ValueError, TypeError, RuntimeError, AttributeError):
        return "error", None


PIECES = list("abcABZ xy019\t\n,;-_.!'(){}\\/|é") + [
    "ß", "İ", "ﬁ", "Ω", "١", "\u00a0", "\u2028", "\x1c", "\\boxed{", "}", "choice", "Option", "OPTIONS", "and",
    "ANSWER", "letters", "unknown", "UNKNOWN", "red", "blue", "a-b", "x_y", " , ", "; ", "  "]


def text(rng: random.Random, n: int = 12) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, n)))


FLAG_VALUES = [True, False, 0, 1, "", "x", None]


def test_checkers_equal_upstream(qa):
    rng, n = random.Random(11), 0
    for _ in range(4000):
        flags = {k: rng.choice(FLAG_VALUES) for k in ("lower", "normalize_hyphen", "strip_punct")
                 if rng.random() < 0.5}
        seps = rng.sample([",", ";", "/", "and", "|", " ", ""], rng.randint(0, 3))
        pred, gold = text(rng), text(rng)
        assert ours.normalize(pred, **flags) == qa.normalize_phrase(pred, **flags)
        assert ours.split_phrases(gold, separators=seps, **flags) == qa.split_phrases(gold, separators=seps, **flags)
        rne = rng.choice(FLAG_VALUES)
        for name in ("norm_phrase_set_match", "norm_phrase_set_match_ordered"):
            up = getattr(qa, name)(pred, gold, separators=seps, require_non_empty=rne, **flags)
            assert getattr(ours, name)(pred, gold, separators=seps, require_non_empty=rne, **flags) == up, (name, pred,
                                                                                                         gold)
        strip = "".join(rng.sample(".,() B", rng.randint(0, 3)))
        assert ours.mc_choice_match(pred, gold, strip_chars=strip, require_non_empty=rne) == \
            qa.mc_choice_match(pred, gold, strip_chars=strip, require_non_empty=rne)
        assert ours.mc_choice_set_match(pred, gold, require_non_empty=rne) == \
            qa.mc_choice_set_match(pred, gold, require_non_empty=rne)
        assert ours.extract_boxed_answer(pred) == qa.extract_boxed_answer(pred)
        assert ours.is_unknown(pred) == qa.is_unknown(pred)
        n += 8
    for odd in (None, 42, 3.5, ["x"]):
        assert ours.normalize(odd) == qa.normalize_phrase(odd)
        assert ours.mc_choice_match(odd, "X") == qa.mc_choice_match(odd, "X")
        assert ours.mc_choice_set_match(odd, "X") == qa.mc_choice_set_match(odd, "X")
        n += 3
    for score in (True, False, 0, 1, 0.0, 1.0, -0.0, 2, -1, 0.5, "1", None, float("nan")):
        assert outcome(ours.score_to_bool, score) == outcome(qa.score_to_bool, score)
        n += 1
    COUNTS["checkers"] = n
    print(f"\nchecker cases compared: {n}")


SPEC_KEYS = ["separators", "separator", "lower", "normalize_hyphen", "strip_punct", "require_non_empty",
             "strip_chars", "foo", "a b", ""]
SPEC_VALUES = ["true", "FALSE", "none", "Null", "", ",;", " , ; ", '["," , "and"]', "[1, 2]", "[bad]", "[]", "0",
               "1", "-3", "1.5", ".5", "1_0.5", "1.2.3", "1e5", "inf", "nan.", "x", "()", "=", "a=b"]


def random_spec(rng: random.Random) -> str:
    name = rng.choice(sorted(ours.KNOWN_CHECKERS) * 4 + ["", " ", "no_such_checker", "NORM_PHRASE_SET_MATCH"])
    parts = [f"{' ' * rng.randint(0, 1)}{name}"]
    for _ in range(rng.randint(0, 4)):
        kind = rng.random()
        if kind < 0.8:
            parts.append(f"{rng.choice(SPEC_KEYS)}{rng.choice(['=', ' = ', '='])}{rng.choice(SPEC_VALUES)}")
        elif kind < 0.9:
            parts.append(rng.choice(["", " ", "novalue"]))
        else:
            parts.append(parts[-1])  # a repeated option
    return "|".join(parts)


def test_spec_parsing_and_scoring_equal_upstream(qa):
    rng, parsed, scored = random.Random(12), 0, 0
    for _ in range(6000):
        spec = random_spec(rng)
        mine = outcome(ours.parse_eval_function, spec)
        up = outcome(qa.parse_eval_function_spec, spec)
        if up[0] == "ok":
            up = ("ok", (up[1][0].__name__, up[1][1]))
        assert (mine[0], repr(mine[1])) == (up[0], repr(up[1])), spec
        parsed += 1
        if mine[0] != "ok" or mine[1][0] not in ours.DETERMINISTIC_CHECKERS:
            continue
        raw = text(rng)
        answer = ours.extract_boxed_answer(raw)
        gold = text(rng, 6)
        ours_score = outcome(ours.score_deterministic, mine[1][0], mine[1][1], answer, gold)

        def upstream_score():
            verdict = qa.score_to_bool(qa.eval_from_spec(spec, answer, gold))
            return False if qa.is_unknown(answer) else verdict
        assert ours_score == outcome(upstream_score), (spec, answer, gold)
        scored += 1
    COUNTS["specs"] = parsed + scored
    print(f"\nspec cases compared: {parsed} parsed, {scored} scored end to end")


LABEL_VALUES = ["0", "1", '"0"', '"1"', "true", "false", "1.0", "0.0", "2", "10", '"yes"', "null", "[1]",
                '{"v": 1}', '"1 "', "-1"]


def random_reply(rng: random.Random) -> str:
    body = '{"label": %s, "reason": "%s"}' % (rng.choice(LABEL_VALUES), rng.choice(["ok", "label: 1", "", "x"]))
    choices = [body, body[:-1], "'label': %d" % rng.randint(0, 1), "label = %d" % rng.randint(0, 2),
               '"Label" : %d' % rng.randint(0, 1), "labels: 1", "{", "}", "no label here", "{'a': 1}", " ", "\n"]
    reply = "".join(rng.choice(choices) for _ in range(rng.randint(0, 3)))
    if rng.random() < 0.3:
        reply = rng.choice(["```json\n", "```\n", "```"]) + reply + rng.choice(["\n```", "```", ""])
    return reply


def test_judge_labels_equal_upstream(qa):
    rng, n = random.Random(13), 0
    for _ in range(5000):
        reply = random_reply(rng)
        try:
            mine = ("ok", parse_judge_label(reply))
        except UnparseableJudgeReply:
            mine = ("error", None)
        up = outcome(lambda r: qa._parse_llm_binary_judgement(r)[0], reply)
        assert mine == up, reply
        n += 1
    assert outcome(lambda: qa._parse_llm_binary_judgement(None)) == ("error", None)
    with pytest.raises(UnparseableJudgeReply):
        parse_judge_label(None)
    COUNTS["labels"] = n + 1
    print(f"\njudge-label cases compared: {n + 1}")


# ------------------------------------------------------------------ aggregation (harness.py, by parsing)

@pytest.fixture(scope="module")
def harness(checkout, qa):
    tree = ast.parse(verified_source(checkout, "evaluation/harness.py"))
    wanted_defs = {"require", "aggregate_metrics", "score_prediction", "all_haystacks_shared",
                   "category_from_question_type"}
    wanted_names = {"CATEGORY_MAP", "NON_ABSTENTION_CATEGORIES", "ABSTENTION_CATEGORIES",
                    "COMBINED_ABSTENTION_CATEGORY_PAIRS", "LLM_EVAL_FUNCTIONS"}
    top = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted_defs
           or isinstance(n, ast.Assign) and {getattr(t, "id", "") for t in n.targets} & wanted_names]
    ns: dict = {"Any": object, "eval_from_spec": qa.eval_from_spec, "score_to_bool": qa.score_to_bool}
    exec(compile(ast.Module(top, []), "harness.py", "exec"), ns)  # noqa: S102
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    totals = {"records", "total_prompt_tokens", "total_completion_tokens", "total_memory_context_tokens",
              "total_memory_context_original_tokens", "total_memory_query_duration_seconds",
              "total_memory_post_query_duration_seconds", "truncated_sequence_count", "memory_query_durations",
              "memory_post_query_durations"}

    def target(stmt):
        node = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
        return getattr(node, "id", None)
    inits = [s for s in main.body if isinstance(s, (ast.Assign, ast.AnnAssign)) and target(s) in totals]
    scoring = next(s for s in main.body if isinstance(s, ast.With) and "per_question_path" in ast.unparse(s.items[0]))
    loop = next(s for s in scoring.body if isinstance(s, ast.For))
    cut = next(i for i, s in enumerate(loop.body) if ast.unparse(s) == "records.append(record)")
    start = next(i for i, s in enumerate(main.body) if ast.unparse(s).startswith("aggregated = aggregate_metrics("))
    stop = next(i for i, s in enumerate(main.body) if ast.unparse(s).startswith("save_json(output_dir / 'aggregated"))
    assert len(inits) == len(totals) and loop.body[cut + 1:] and stop > start
    pieces = {name: compile(ast.Module(body, []), f"harness.py:{name}", "exec")
              for name, body in (("init", inits), ("accumulate", loop.body[cut + 1:]),
                                 ("tail", main.body[start:stop]))}
    return ns, pieces


def upstream_aggregate(harness, records: list[dict], shared: bool, first_haystack: list[str]) -> dict:
    ns, pieces = harness
    env = dict(ns, utc_now_iso=lambda: "CLOCK", shared_haystack=shared,
               shared_haystack_ids=first_haystack if shared else None)
    exec(pieces["init"], env)  # noqa: S102
    for record in records:
        env["records"].append(record)
        env["row"] = record
        exec(pieces["accumulate"], env)  # noqa: S102
    exec(pieces["tail"], env)  # noqa: S102
    return env["aggregated"]


def random_rows(rng: random.Random) -> list[dict]:
    out = []
    hay = rng.choice([["t1"], ["t1", "t2"]])
    for i in range(rng.randint(1, 40)):
        qtype = rng.choice(sorted(TYPE_CATEGORY))
        original = rng.randint(0, 3000)
        durations = [rng.choice([0.0, rng.random() * 10, rng.expovariate(0.1), float(rng.randint(0, 5))])
                     for _ in range(2)]
        extra = {"failed": "judge reply unparseable"} if rng.random() < 0.05 else {}
        out.append(row(f"q{i}", qtype, correct=rng.random() < 0.5, unknown=rng.random() < 0.2,
                       abstention=qtype.endswith("-abs") and rng.random() < 0.8, query=durations[0],
                       post=durations[1], prompt=rng.randint(0, 50000), completion=rng.randint(0, 900),
                       original=original, final=rng.randint(0, original), index=i,
                       haystack=tuple(hay if rng.random() < 0.9 else ["t3"]), **extra))
    return out


@pytest.mark.task("longmemeval-v2", "Static state recall")
@pytest.mark.task("longmemeval-v2", "Dynamic state tracking")
@pytest.mark.task("longmemeval-v2", "Workflow knowledge")
@pytest.mark.task("longmemeval-v2", "Environment gotchas")
@pytest.mark.task("longmemeval-v2", "Premise awareness")
def test_aggregation_equals_harness(harness):
    ns = harness[0]
    rng, n = random.Random(14), 0
    for _ in range(600):
        raws = random_rows(rng)
        scored = [r for r in raws if "failed" not in r]
        if not scored:
            continue
        mapping = {r["question_id"]: r["haystack_ids"] for r in raws}
        shared = ns["all_haystacks_shared"]([r["question_id"] for r in raws], mapping)
        expected = upstream_aggregate(harness, scored, shared, raws[0]["haystack_ids"])
        typed = [PerQuestionRow.from_record(r, file="t", line=i + 1) for i, r in enumerate(raws)]
        mine = our_aggregate.aggregate(typed, completed_at_utc="CLOCK")
        assert mine.pop("mnemetric", None) is None or len(scored) < len(raws)
        assert json.dumps(mine) == json.dumps(expected)
        assert ns["aggregate_metrics"](scored) == our_aggregate.score_sections(
            [t for t in typed if not t.failed])
        for r in raws:  # the harness's scoring rule on a deterministic spec
            spec = rng.choice(["norm_phrase_set_match|separators=,", "mc_choice_match", "mc_choice_set_match"])
            up_row = {"eval_name": ours.eval_name(spec), "eval_function": spec, "answer_gold": r["answer_gold"],
                      "response_parsed_boxed": r["response_parsed_boxed"], "response_raw": r["response_raw"],
                      "is_unknown": r["is_unknown"], "question_item": {}}
            name, options = ours.parse_eval_function(spec)
            assert ns["score_prediction"](up_row, {})[0] == ours.score_deterministic(
                name, options, r["response_parsed_boxed"], r["answer_gold"])
            n += 1
        n += 2
    COUNTS["aggregation"] = n
    print(f"\naggregation cases compared: {n} (runs x 2 + per-row scoring)")


# ------------------------------------------------------------------ combination

def number(rng: random.Random):
    return rng.choice([None, rng.random(), float(rng.randint(0, 9)), rng.randint(0, 9), 0.0, 1.0])


def maybe_bad(rng: random.Random, value):
    if rng.random() < 0.003:
        return rng.choice([True, "0.5", -1, 2.5, [1]])
    return value


def breakdown(rng: random.Random) -> dict:
    out = {"count": maybe_bad(rng, rng.choice([0, rng.randint(0, 30), None]))}
    for key in ("pct_correct", "pct_answered_wrong", "pct_unknown"):
        if rng.random() < 0.9:
            out[key] = maybe_bad(rng, number(rng))
    return out


def section(rng: random.Random, cats: list[str]):
    if rng.random() < 0.08:
        return rng.choice([None, [], "x", {}])
    keys = [c for c in cats + ["extra"] if rng.random() < 0.7]
    return {k: (breakdown(rng) if rng.random() > 0.003 else 3) for k in keys}


def summary(rng: random.Random, keys: list[str]):
    if rng.random() < 0.05:
        return rng.choice([None, [], "x"])
    return {k: maybe_bad(rng, number(rng) if "count" not in k and "num_" not in k else rng.randint(0, 9))
            for k in keys if rng.random() < 0.75}


def random_aggregate(rng: random.Random) -> dict:
    counts = [rng.randint(0, 40) for _ in range(2)]
    overall = {"overall_full_set": number(rng), "overall_non_abstention_only": number(rng),
               "overall_abstention_only": number(rng),
               "count_all_questions": maybe_bad(rng, rng.choice([sum(counts), sum(counts) + 1, None])
                                                if rng.random() < 0.02 else max(sum(counts), 1)),
               "count_non_abstention": maybe_bad(rng, counts[0]), "count_abstention": maybe_bad(rng, counts[1])}
    out: dict = {"overall": {k: v for k, v in overall.items() if rng.random() < 0.95}}
    if rng.random() < 0.01:
        out = {}
    out["non_abstention_by_category"] = section(rng, ["static", "dynamic", "procedure", "gotchas"])
    out["abstention_by_category"] = section(rng, ["static-abs", "dynamic-abs", "procedure-abs"])
    if rng.random() < 0.7:
        out["combined_abstention_by_category"] = section(rng, ["static", "dynamic", "procedure"])
    if rng.random() < 0.9:
        out["abstention_overall"] = breakdown(rng) if rng.random() > 0.01 else None
    tokens = ["prompt_tokens", "completion_tokens", "total_tokens", "avg_prompt_tokens", "avg_completion_tokens",
              "avg_total_tokens"]
    timing = ["avg_seconds", "p50_seconds", "p95_seconds", "max_seconds", "total_seconds"]
    for key, fields in (("tokens", tokens), ("memory_context", ["avg_original_tokens", "avg_final_tokens",
                                                                 "num_truncated_sequences"]),
                        ("memory_query", timing), ("memory_post_query", timing)):
        if rng.random() < 0.9:
            out[key] = summary(rng, fields)
    return out


def test_combination_equals_upstream(checkout):
    up = load(checkout, "leaderboard/combine_aggregated_metrics.py")
    rng, n, errors = random.Random(15), 0, 0
    for _ in range(5000):
        a, b = random_aggregate(rng), random_aggregate(rng)
        mine = outcome(our_combine.combine_aggregates, a, b, sources=("runs/x_web_small/agg.json", "b.json"))
        theirs = outcome(up.combine_metrics, a, b, Path("runs/x_web_small/agg.json"), Path("b.json"))
        if theirs[0] == "ok":
            theirs[1].pop("combined_at_utc")
        assert mine[0] == theirs[0], (a, b)
        assert json.dumps(mine[1]) == json.dumps(theirs[1])
        if mine[0] == "ok":  # the typed record of the combined file holds exactly what upstream writes
            typed = our_combine.combine_metrics(a, b, sources=("runs/x_web_small/agg.json", "b.json"))
            assert json.dumps(typed.to_record()) == json.dumps(theirs[1])
        errors += mine[0] == "error"
        n += 1
    assert errors and errors < n / 2
    COUNTS["combine"] = n
    print(f"\ncombination cases compared: {n} ({errors} where both refuse the input)")


# ------------------------------------------------------------------ LAFS

def test_lafs_equals_upstream(checkout):
    up = load(checkout, "leaderboard/compute_lafs.py")
    assert {t: [(p.acc, p.latency) for p in pts] for t, pts in up.fixed_frontier_points.items()} == \
        {t: [(p.accuracy, p.latency_seconds) for p in pts] for t, pts in our_lafs.REFERENCE_POINTS.items()}
    assert (up.T_MIN, up.T_MAX, up.FLOOR_ACC) == (our_lafs.T_MIN, our_lafs.T_MAX, our_lafs.FLOOR_ACCURACY)
    rng, n = random.Random(16), 0
    for _ in range(3000):
        pts = [(rng.choice([rng.uniform(-5, 100), float(rng.randint(0, 100)), rng.randint(0, 100)]),
                rng.choice([rng.uniform(0.01, 400), 1.0, 200.0, 0.2, 26.9, rng.expovariate(0.05),
                            0.0 if rng.random() < 0.02 else 5.0]), f"p{i}") for i in range(rng.randint(0, 6))]
        if pts and rng.random() < 0.2:
            pts.append(pts[0][:2] + ("twin",))
        up_pts = [up.Point(name, acc, lat) for acc, lat, name in pts]
        tier = rng.choice(["small", "medium"])
        mine = outcome(our_lafs.lafs, pts)
        assert mine == outcome(up.lafs, up_pts), pts
        if mine[0] == "error":
            n += 1
            continue
        assert [(p.name, p.accuracy, p.latency_seconds) for p in our_lafs.frontier(pts)] == \
            [(p.name, p.acc, p.latency) for p in up.pareto_frontier(up_pts)]
        assert our_lafs.lafs_gain(pts, tier) == up.lafs_gain_for_submission(up.fixed_frontier_points[tier], up_pts)
        assert json.dumps(our_lafs.lafs_summary(tier, pts)) == json.dumps(up.lafs_summary_for_submission(tier,
                                                                                                          up_pts))
        t_min = rng.choice([0.5, 1.0, 2.0])
        t_max = rng.choice([50.0, 200.0, 1000.0])
        assert our_lafs.lafs(pts, t_min=t_min, t_max=t_max) == up.lafs(up_pts, t_min, t_max)
        n += 5
    COUNTS["lafs"] = n
    print(f"\nLAFS cases compared: {n}")
