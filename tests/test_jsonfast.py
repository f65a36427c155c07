"""The ijson fast path of iter_json_items: used on plain strict JSON, handing over to the strict reader
(which names the flaw) at each place yajl reads differently from strict JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemetric import jsonfast, jsonstream, jsonstrict
from mnemetric.jsonfast import Suspect, fast_items

PAIRS = ["\U0001f600" * 3, 'q"\\\n\u00e9\u2019', "a\U0001f4a9b", {"k\U0001f600": ["\U0001f600x", 1.5, -2, None, True]}, "x" * 30, 2 ** 63 - 1]


def _fast(path, chunk):
    with open(path, "rb") as fh:
        return list(fast_items(fh, chunk))


@pytest.mark.parametrize("chunk", [*range(16, 40), 1 << 16])
def test_escapes_cut_at_every_read_boundary_stay_on_the_fast_path(tmp_path, chunk):
    """yajl decodes a surrogate pair cut between two reads as two lone halves: reads never cut one."""
    path = tmp_path / "x.json"
    path.write_text(json.dumps(PAIRS), encoding="utf-8")  # ensure_ascii: every emoji is a \\ud83d\\ude00 pair
    assert "\\ud83d" in path.read_text()
    assert _fast(path, chunk) == PAIRS


@pytest.mark.parametrize("chunk", [16, 17, 21, 1 << 16])
@pytest.mark.parametrize("text, why", [
    ('[{"a": 1}, {"b": 1, "b": 2}]', "repeated key"),
    ('[1, "x\\ud800"]', "lone surrogate"),  # yajl would read it as "?"
    ('[1,\x0c2]', "form feed"),  # yajl's whitespace, not JSON's
    ('[1,\x0b2]', "vertical tab"),
    ('\n  {"question_id": 1}', "not a list"),
])
def test_each_difference_from_strict_json_is_handed_to_the_strict_reader(tmp_path, chunk, text, why):
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(Suspect):
        _fast(path, chunk)


@pytest.mark.parametrize("text", ['[1, NaN]', '[1e999]', '[1] x', '[123456789012345678901234567890]', '["\xff"]',
                                  '["\\udc00", 2]', '[1, "ab\\ude00\\ud83d"]'])  # lone low halves: not UTF-8 to ijson
def test_yajl_refuses_what_strict_json_refuses_or_cannot_hold(tmp_path, text):
    path = tmp_path / "x.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(Exception):  # noqa: B017 - ijson's error: iter_json_items hands over, whatever it is
        _fast(path, 1 << 16)


def test_a_clean_file_never_reaches_the_strict_reader(tmp_path, monkeypatch):
    items = [{"question_id": f"q{i}", "turns": [{"role": "user", "content": "é\U0001f600" * i}]} for i in range(50)]
    path = tmp_path / "x.json"
    path.write_text(json.dumps(items, indent=1), encoding="utf-8")
    monkeypatch.setattr(jsonstream, "strict_items", lambda p: pytest.fail("fell back"))
    monkeypatch.setattr(jsonstrict, "CHUNK", 64)
    assert [item for item, flaws in jsonstream.iter_json_items(path)] == items


def test_the_hand_over_skips_exactly_the_items_already_given(tmp_path, monkeypatch):
    """The strict reader takes over mid-file: every item comes out once, in order, the flawed one flagged."""
    monkeypatch.setattr(jsonstrict, "CHUNK", 32)
    items = [{"id": i, "pad": "z" * 40} for i in range(20)]
    text = json.dumps(items)
    text = text.replace('{"id": 12,', '{"id": 12, "id": 12,')  # a repeated key in item 12
    path = tmp_path / "x.json"
    path.write_text(text)
    strict = []
    real = jsonstream.strict_items
    monkeypatch.setattr(jsonstream, "strict_items", lambda p: strict.append(p) or real(p))
    got = list(jsonstream.iter_json_items(path))
    assert strict == [path]
    assert [item for item, _ in got] == items
    assert [i for i, (_, flaws) in enumerate(got) if flaws] == [12]


def test_objects_are_plain_dicts_to_callers(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('[{"a": {"b": 1}}]')
    (item,) = _fast(path, 1 << 16)
    assert isinstance(item, dict) and item == {"a": {"b": 1}}
    item["a"] = 2  # a caller may overwrite a key: the fast path's repeated-key note is only read while it parses
    assert json.dumps(item) == '{"a": 2}' and jsonfast._local.repeated


def test_a_validation_message_names_an_object_as_the_strict_reader_does(tmp_path, monkeypatch):
    """A field holding an object is named ``dict`` by validate on either reader (the fast path's object type
    was shown by its class name, ``_Object``)."""
    from mnemetric.longmemeval import instance

    rec = json.loads((Path(__file__).parent.parent / "data" / "sample" / "longmemeval_sample.json").read_text())[0]
    path = tmp_path / "x.json"
    path.write_text(json.dumps([{**rec, "answer": {"x": 1}}]))

    def messages() -> list[str]:
        found: list[str] = []
        instance.scan_file(path, lambda f: found.append(str(f)))
        return [m for m in found if "'answer'" in m]

    fast = messages()
    monkeypatch.setattr(instance, "iter_json_items", jsonstream.strict_items)
    assert fast == messages() and len(fast) == 1 and "got dict" in fast[0], fast


@pytest.mark.parametrize("text", ["[" + "[" * 100_000 + "]" * 100_000 + "]", "[" + '{"a": [' * 1500])
def test_deep_nesting_never_reaches_yajl(tmp_path, text):
    """ijson keeps a path per level (memory grows with the square of the depth): the strict reader judges it."""
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(Exception):  # noqa: B017 - ijson's premature end: iter_json_items hands over
        _fast(path, 1 << 20)


def test_the_fast_path_is_yajl2_c_by_name_and_without_it_the_strict_reader_reads_the_same_items(tmp_path, monkeypatch,
                                                                                              capsys):
    """The fast path asks ijson for yajl2_c by name (its guards are yajl's), never for ijson's best available
    backend; an ijson without its C extension reads every file with the strict reader, said once on stderr."""
    assert jsonfast.BACKEND == "yajl2_c"  # the dependency this environment promises (ijson's C build)
    path = tmp_path / "items.json"
    path.write_text(json.dumps(PAIRS), encoding="utf-8")
    fast = [item for item, _ in jsonstream.iter_json_items(path)]
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(jsonfast, "_YAJL", None)
    monkeypatch.setattr(jsonfast, "_said", [])
    with pytest.raises(Suspect, match="yajl2_c"):
        _fast(path, 1 << 16)
    assert [item for item, _ in jsonstream.iter_json_items(path)] == fast == PAIRS
    assert [item for item, _ in jsonstream.iter_json_items(path)] == fast
    err = capsys.readouterr().err
    assert err.count("yajl2_c") == 1 and "pip install" in err and "Traceback" not in err
