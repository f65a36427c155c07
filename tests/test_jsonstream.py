"""iter_json_list: items split across any chunk boundary decode; a broken item fails fast."""

from __future__ import annotations

import json

import pytest

from mnemetric import jsonstream, jsonstrict
from mnemetric.jsonstream import iter_json_list
from mnemetric.errors import InputError

# Tokens that a chunk boundary can cut anywhere: literals, numbers, escapes, surrogate pairs.
TRICKY = [True, False, None, -1.5e10, 12345678901234567890, 0.25, "a\\\"b\n", "\u00e9\U0001f600x",
          {"k": [1, {"n": None}], "e": "", "u": "\u1234"}, [], {}, "x" * 40]


@pytest.mark.parametrize("chunk", range(1, 14))
def test_items_split_at_every_boundary_decode(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonstrict, "CHUNK", chunk)
    path = tmp_path / "x.json"
    for text in (json.dumps(TRICKY), json.dumps(TRICKY, indent=3), json.dumps(TRICKY, ensure_ascii=False)):
        path.write_text(text, encoding="utf-8")
        assert list(iter_json_list(path)) == TRICKY


def test_broken_early_item_is_reported_without_reading_the_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonstrict, "CHUNK", 64)
    head = json.dumps({"id": 0}) + ", "
    bad = '{"id": 1 "oops": 2}'  # missing comma
    tail = "".join(f', {{"id": {i}, "pad": "{"z" * 50}"}}' for i in range(2, 5000))
    path = tmp_path / "big.json"
    path.write_text("[" + head + bad + tail + "]", encoding="utf-8")
    biggest = []
    real_fill = jsonstrict._Reader.fill

    def fill(self, min_more: int = 64) -> bool:
        more = real_fill(self, min_more)
        biggest.append(len(self.buf))
        return more

    monkeypatch.setattr(jsonstrict._Reader, "fill", fill)
    items = iter_json_list(path)
    assert next(items) == {"id": 0}
    with pytest.raises(InputError) as info:
        next(items)
    message = str(info.value)
    into = bad.index('"oops"')
    assert "item 1 is not valid JSON (Expecting ',' delimiter" in message
    assert f"at character {1 + len(head) + into} of the file, {into} into the item" in message
    assert max(biggest) < 1000 < path.stat().st_size // 100  # a few chunks, not the 300 kB tail


def test_unterminated_string_reads_on_until_eof(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonstrict, "CHUNK", 8)
    path = tmp_path / "x.json"
    path.write_text('[{"a": "' + "y" * 500, encoding="utf-8")
    with pytest.raises(InputError, match="item 0 is not valid JSON \\(Unterminated string"):
        list(iter_json_list(path))


# ------------------------------------------------------------------ strict JSON (issue 7, item 7)


def _error(path) -> InputError:
    with pytest.raises(InputError) as info:
        list(iter_json_list(path))
    return info.value


@pytest.mark.parametrize("chunk", range(1, 14))
def test_invalid_utf8_is_named_by_byte_offset_at_every_chunk_size(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonstrict, "CHUNK", chunk)
    head = '[{"a": "é€😀"},\n {"b": "x\\n y"},\n {"c": "'.encode()  # multi-byte characters before the bad byte
    path = tmp_path / "x.json"
    path.write_bytes(head + b"\xff" + b'"}]')
    p = _error(path).problem
    line = head.count(b"\n") + 1
    assert (p.record, p.field) == (f"line {line}", "<encoding>")
    assert f"0xff at byte offset {len(head)} is not valid UTF-8 (invalid start byte)" == p.message


def test_a_character_cut_at_the_end_of_the_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(b'["caf\xc3')
    assert "0xc3 at byte offset 5 is not valid UTF-8 (unexpected end of data)" == _error(path).problem.message


@pytest.mark.parametrize("encoding, bom, name", [
    ("utf-8", b"\xef\xbb\xbf", "UTF-8"), ("utf-16-le", b"\xff\xfe", "UTF-16"), ("utf-16-be", b"\xfe\xff", "UTF-16"),
    ("utf-32-le", b"\xff\xfe\x00\x00", "UTF-32"), ("utf-32-be", b"\x00\x00\xfe\xff", "UTF-32")])
def test_byte_order_marks_are_named(tmp_path, encoding, bom, name):
    path = tmp_path / "x.json"
    path.write_bytes(bom + "[1]".encode(encoding))
    err = _error(path)
    assert (err.problem.record, err.problem.field) == ("line 1", "<encoding>")
    assert f"starts with a {name} byte order mark (BOM, bytes {bom.hex(' ')})" in err.problem.message
    assert ("tail -c +4" if name == "UTF-8" else f"iconv -f {name}") in (err.fix or "")


def test_utf16_without_a_bom_is_named(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes("[1]".encode("utf-16-le"))
    assert "looks UTF-16 or UTF-32" in _error(path).problem.message


@pytest.mark.parametrize("chunk", range(1, 14))
def test_data_after_the_list_is_an_error_but_whitespace_is_not(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonstrict, "CHUNK", chunk)
    path = tmp_path / "x.json"
    path.write_text("[1, 2]\n \t\r\n")
    assert list(iter_json_list(path)) == [1, 2]
    path.write_text("[1, 2]  \n x]")
    p = _error(path).problem
    assert (p.record, p.field) == ("line 2", "<json>")
    assert p.message == "unexpected 'x' after the closing ']' of the list (line 2 column 2, character 10 of the file, byte offset 10)"


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8, 13, 1 << 20])
@pytest.mark.parametrize("text", ['[1,\n2,\n {"a" 1}]', '[\n\n  {"k": [1, 2,, 3]}]', '["ab",\r\n"cd" "e"]',
                                  '[{"x": "é"},\n{"y": "\\u00zz"}]'])
def test_line_and_column_of_a_broken_item_equal_the_stdlib_decoder(tmp_path, monkeypatch, chunk, text):
    """Independent reference: json.loads over the whole text reports the same line and column."""
    monkeypatch.setattr(jsonstrict, "CHUNK", chunk)
    with pytest.raises(json.JSONDecodeError) as ref:
        json.loads(text)
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    message = _error(path).problem.message
    assert f"character {ref.value.pos} of the file" in message  # between items the message is our own
    assert f"line {ref.value.lineno} column {ref.value.colno}" in message


@pytest.mark.parametrize("text, says", [("", "the file is empty"), ("  x", "found 'x'")])
def test_not_a_list(tmp_path, text, says):
    path = tmp_path / "x.json"
    path.write_text(text)
    assert f"does not start with '[' (not a JSON list; {says})" in _error(path).problem.message
    path.write_text('\n{"question_id": "a"}')
    p = _error(path).problem
    assert p.record == "line 2" and "starts with '{'" in p.message


@pytest.mark.parametrize("chunk", range(1, 9))
def test_non_finite_numbers_come_back_as_flaws_with_their_path(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonstrict, "CHUNK", chunk)
    path = tmp_path / "x.json"
    path.write_text('[1.5, {"a": [1, {"b": NaN}], "c": -Infinity}, 1E400, [0.5, 2e308, -1e-400]]')
    got = [(item if not flaws else None, [f.path for f in flaws]) for item, flaws in jsonstream.iter_json_items(path)]
    assert got == [(1.5, []), (None, ["a[1].b", "c"]), (None, [""]), (None, ["[1]"])]
    err = _error(path)
    assert (err.problem.record, err.problem.field) == ("index 1", "a[1].b")
    assert err.problem.message.startswith("NaN is not valid JSON")


@pytest.mark.parametrize("chunk", range(1, 14))
def test_lone_surrogates_are_flaws_pairs_are_not(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonstrict, "CHUNK", chunk)
    path = tmp_path / "x.json"
    items = ['"\\ud83d\\ude00"', '"\\uD83D\\uDE00"', '{"k": "a\\udc00"}', '"\\\\ud800"', '{"\\ud800": 1}',
             '["x", "\\ude00\\ud83d"]']
    path.write_text("[" + ", ".join(items) + "]")
    got = [[f.path for f in flaws] for _, flaws in jsonstream.iter_json_items(path)]
    assert got == [[], [], ["k"], [], ['["\\ud800"]'], ["[1]"]]  # a path that prints (escaped)
    values = [json.loads(i) for i in items[:2] + items[3:4]]
    assert values == ["\U0001f600", "\U0001f600", "\\ud800"]


@pytest.mark.parametrize("chunk", [*range(1, 14), 1 << 20])
def test_items_before_bad_bytes_still_come_out(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonstrict, "CHUNK", chunk)
    head = b'[{"a": "\xc3\xa9"}, 12, "x", {"b": "'
    path = tmp_path / "x.json"
    path.write_bytes(head + b"\x80" + b'"}]')
    items = jsonstream.iter_json_items(path)
    assert [next(items)[0] for _ in range(3)] == [{"a": "é"}, 12, "x"]
    with pytest.raises(InputError, match=f"0x80 at byte offset {len(head)} is not valid UTF-8"):
        next(items)
    path.write_bytes(b"[12\xff]")  # a number right before the bad byte: read, then the byte is reported
    items = jsonstream.iter_json_items(path)
    with pytest.raises(InputError, match="0xff at byte offset 3"):
        list(items)


@pytest.mark.parametrize("chunk", range(1, 9))
def test_a_repeated_key_comes_back_as_a_flaw_with_its_path(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonstrict, "CHUNK", chunk)
    path = tmp_path / "x.json"
    path.write_text('[{"a": 1}, {"q": [{"b": 1, "b": 2}], "question_id": "q7", "a": 1, "a": 3}]')
    got = [(item, [(f.path, f.message.split(":")[0]) for f in flaws]) for item, flaws in jsonstream.iter_json_items(path)]
    assert got[0] == ({"a": 1}, [])
    assert got[1][1] == [("a", "duplicate key"), ("q[0].b", "duplicate key")]
    assert got[1][0] == {"q": [{"b": 2}], "question_id": "q7", "a": 3}  # json's last-wins value, flagged
    err = _error(path)
    assert (err.problem.record, err.problem.field) == ("q7", "a")
    assert (err.problem.index, err.problem.offset) == (1, path.read_bytes().index(b'{"q"'))
    assert f"{path}: question 'q7' (index 1, byte 11): field 'a': duplicate key" in str(err)
    assert "'a' appears twice" in err.problem.message
