"""aggregated_metrics.json as one typed record: what aggregate writes reads back equal and writes back byte for
byte; a file off the harness layout is an InputError naming the file, the section and the field."""

from __future__ import annotations

import copy
import json

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval_v2.aggregate import aggregate, aggregate_metrics, upstream_json
from mnemetric.longmemeval_v2.aggregated import AggregatedMetrics, read_aggregated, write_aggregated

from tests.longmemeval_v2.rows import row
from tests.longmemeval_v2.test_aggregate import six_rows, typed
from tests.support.edits import set_at


def runs():
    clean = typed(six_rows())
    failed = typed(six_rows()[:3] + [row("qf", "procedure", failed="reader returned no text")] + six_rows()[3:])
    unshared = typed([row("a", haystack=("t1",)), row("b", haystack=("t1", "t2"))])
    return [(clean, None), (failed, "2026-06-20T10:00:00+00:00"), (unshared, None)]


@pytest.mark.parametrize("case", range(3))
def test_written_bytes_are_the_upstream_layout_and_read_back_equal(tmp_path, case):
    rows, clock = runs()[case]
    metrics = aggregate_metrics(rows, completed_at_utc=clock)
    path = tmp_path / "aggregated_metrics.json"
    write_aggregated(path, metrics)
    assert path.read_text(encoding="utf-8") == upstream_json(aggregate(rows, completed_at_utc=clock))
    back = read_aggregated(path)
    assert back == metrics and upstream_json(back.to_record()) == path.read_text(encoding="utf-8")
    assert (back.failed is not None) == (case == 1) and back.shared_haystack == (case != 2)


def good() -> dict:
    return aggregate(typed(six_rows()))


def edited(path: str, value) -> dict:
    return set_at(good(), path, value)


@pytest.mark.parametrize("path, value, record, field, words", [
    ("overall", KeyError, "<file>", "overall", "missing"),
    ("overall", [1], "overall", "<section>", "expected a JSON object, got list"),
    ("overall.count_all_questions", 0, "overall", "count_all_questions", "must be a positive integer"),
    ("overall.count_all_questions", True, "overall", "count_all_questions", "expected a non-negative integer"),
    ("overall.overall_full_set", "0.5", "overall", "overall_full_set", "expected a number or null, got str"),
    ("overall.overall_abstention_only", KeyError, "overall", "overall_abstention_only", "missing"),
    ("non_abstention_by_category.static", 5, "non_abstention_by_category.static", "<section>",
     "expected a JSON object"),
    ("abstention_by_category.static-abs.count", 1.5, "abstention_by_category.static-abs", "count",
     "expected a non-negative integer, got float"),
    ("combined_abstention_by_category", None, "combined_abstention_by_category", "<section>",
     "expected a JSON object, got NoneType"),
    ("abstention_overall.pct_unknown", KeyError, "abstention_overall", "pct_unknown", "missing"),
    ("tokens", KeyError, "<file>", "tokens", "missing"),
    ("tokens.avg_prompt_tokens", [50], "tokens", "avg_prompt_tokens", "expected a non-negative number"),
    ("memory_context.num_truncated_sequences", -2, "memory_context", "num_truncated_sequences",
     "expected a non-negative integer"),
    ("memory_query.p95_seconds", "6", "memory_query", "p95_seconds", "expected a non-negative number"),
    ("memory_post_query.extra", 1, "memory_post_query", "extra", "unexpected field"),
    ("shared_haystack", "yes", "<file>", "shared_haystack", "expected true or false"),
    ("shared_haystack_ids", KeyError, "<file>", "shared_haystack_ids", "present exactly when shared_haystack"),
    ("shared_haystack_ids", ["t1", 2], "<file>", "shared_haystack_ids", "expected a list of strings"),
    ("completed_at_utc", 5, "<file>", "completed_at_utc", "expected a string"),
    ("mnemetric", {"failed_count": 1}, "mnemetric", "failed_question_ids", "missing"),
    ("clock", "now", "<file>", "clock", "unexpected field"),
])
def test_malformed_file_names_file_section_field(tmp_path, path, value, record, field, words):
    target = tmp_path / "aggregated_metrics.json"
    target.write_text(json.dumps(edited(path, value)))
    with pytest.raises(InputError) as err:
        read_aggregated(target)
    assert str(err.value).startswith(f"{target}: {record}: field '{field}': {words}"), str(err.value)
    assert "mnemetric v2 aggregate" in str(err.value)                          # the fix


def test_non_object_and_missing_file(tmp_path):
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(InputError, match="list.json: <file>: field '<json>': expected a JSON object"):
        read_aggregated(tmp_path / "list.json")
    with pytest.raises(InputError, match="does not exist"):
        read_aggregated(tmp_path / "absent.json")


def test_writer_takes_only_the_record(tmp_path):
    with pytest.raises(InputError, match="not an AggregatedMetrics record: dict"):
        write_aggregated(tmp_path / "a.json", good())
    assert not (tmp_path / "a.json").exists()


def test_from_record_keeps_values_as_read():
    raw = good()
    raw["tokens"]["avg_prompt_tokens"] = 35                                    # an integer stays an integer
    record = AggregatedMetrics.from_record(copy.deepcopy(raw), file="a.json")
    assert json.dumps(record.to_record()) == json.dumps(raw)


# ------------------------------------------------------------------ the combination's layout

def test_combined_record_is_exactly_what_combine_writes(tmp_path):
    from mnemetric.longmemeval_v2.aggregated import read_combined, write_combined
    from mnemetric.longmemeval_v2.combine import combine_aggregates, combine_metrics

    web, ent = aggregate_metrics(typed(six_rows())), aggregate_metrics(runs()[1][0])
    for clock in (None, "T0"):
        record = combine_metrics(web, ent, sources=("w.json", "e.json"), combined_at_utc=clock)
        path = tmp_path / "combined_aggregated_metrics.json"
        write_combined(path, record)
        assert path.read_text(encoding="utf-8") == upstream_json(combine_aggregates(
            web.to_record(), ent.to_record(), sources=("w.json", "e.json"), combined_at_utc=clock))
        assert read_combined(path) == record and record.combined_from == ("w.json", "e.json")
        assert ("combined_at_utc" in path.read_text()) == (clock is not None)
    with pytest.raises(InputError, match="not a CombinedMetrics record"):
        write_combined(tmp_path / "c.json", web)


@pytest.mark.parametrize("edit, record, field", [
    (lambda c: c.pop("tokens"), "<file>", "tokens"),
    (lambda c: c["memory_query"].update(p50_seconds=1.0), "memory_query", "p50_seconds"),   # dropped upstream
    (lambda c: c.update(combined_from=["only.json"]), "<file>", "combined_from"),
    (lambda c: c["tokens"].update(total_tokens="9"), "tokens", "total_tokens"),
    (lambda c: c["overall"].update(count_all_questions=0), "overall", "count_all_questions"),
])
def test_malformed_combined_file_names_its_field(tmp_path, edit, record, field):
    from mnemetric.longmemeval_v2.aggregated import read_combined
    from mnemetric.longmemeval_v2.combine import combine_aggregates

    raw = combine_aggregates(good(), good())
    edit(raw)
    (tmp_path / "c.json").write_text(json.dumps(raw))
    with pytest.raises(InputError) as err:
        read_combined(tmp_path / "c.json")
    assert (err.value.problem.record, err.value.problem.field) == (record, field), str(err.value)
