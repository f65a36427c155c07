"""iter_json_list: items split across any chunk boundary decode; a broken item fails fast."""

from __future__ import annotations

import json

import pytest

from mnemetric.data import jsonstream
from mnemetric.data.jsonstream import iter_json_list
from mnemetric.errors import InputError

# Tokens that a chunk boundary can cut anywhere: literals, numbers, escapes, surrogate pairs.
TRICKY = [True, False, None, -1.5e10, 12345678901234567890, 0.25, "a\\\"b\n", "\u00e9\U0001f600x",
          {"k": [1, {"n": None}], "e": "", "u": "\u1234"}, [], {}, "x" * 40]


@pytest.mark.parametrize("chunk", range(1, 14))
def test_items_split_at_every_boundary_decode(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(jsonstream, "CHUNK", chunk)
    path = tmp_path / "x.json"
    for text in (json.dumps(TRICKY), json.dumps(TRICKY, indent=3), json.dumps(TRICKY, ensure_ascii=False)):
        path.write_text(text, encoding="utf-8")
        assert list(iter_json_list(path)) == TRICKY


def test_broken_early_item_is_reported_without_reading_the_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonstream, "CHUNK", 64)
    head = json.dumps({"id": 0}) + ", "
    bad = '{"id": 1 "oops": 2}'  # missing comma
    tail = "".join(f', {{"id": {i}, "pad": "{"z" * 50}"}}' for i in range(2, 5000))
    path = tmp_path / "big.json"
    path.write_text("[" + head + bad + tail + "]", encoding="utf-8")
    biggest = []
    real_fill = jsonstream._Reader.fill

    def fill(self, min_more: int = 64) -> bool:
        more = real_fill(self, min_more)
        biggest.append(len(self.buf))
        return more

    monkeypatch.setattr(jsonstream._Reader, "fill", fill)
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
    monkeypatch.setattr(jsonstream, "CHUNK", 8)
    path = tmp_path / "x.json"
    path.write_text('[{"a": "' + "y" * 500, encoding="utf-8")
    with pytest.raises(InputError, match="item 0 is not valid JSON \\(Unterminated string"):
        list(iter_json_list(path))
