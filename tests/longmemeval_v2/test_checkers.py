"""Checkers, answer parsing and spec parsing: hand-worked cases from upstream-v2-protocol.md §5, then
property tests against second, naive implementations written here (character loops, word lists)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.errors import ConfigError, InputError, PluginError
from mnemetric.longmemeval_v2 import checkers as c

# ------------------------------------------------------------------ hand-worked cases


@pytest.mark.parametrize("text, expected", [
    ("x \\boxed{red}", "x boxedred"),
    ("  Hello,World;Foo  ", "hello world foo"),
    ("state-of_the-art", "state of the art"),
    ("It's 3.5 (ok)!", "its 35 ok"),
    ("Ünïcode ÀB", "ünïcode àb"),
    ("a\t\n  b", "a b"),
    (None, ""),
    (42, "42"),
])
def test_normalize_worked(text, expected):
    assert c.normalize(text) == expected
    assert c.normalize_phrase is c.normalize


def test_normalize_flags():
    assert c.normalize("A-B_c, D!", lower=False) == "A B c D"
    assert c.normalize("a-b_c", normalize_hyphen=False) == "ab_c"        # "-" is punctuation, "_" a word char
    assert c.normalize("a-b!, c", strip_punct=False) == "a b! c"
    assert c.normalize("a-b", normalize_hyphen=0) == "ab"                # truthiness, as upstream


@pytest.mark.parametrize("text, expected", [
    ("The answer is \\boxed{Paris}.", "Paris"),
    ("\\boxed{a} then \\boxed{b}", "b"),                                 # the last box
    ("\\boxed{outer \\boxed{inner} tail}", "inner"),                     # the last marker is the inner one
    ("\\boxed{a{b}c} d", "a{b}c"),                                       # inner braces kept
    ("x \\boxed{ unclosed {x} y", "unclosed {x} y"),                     # unclosed: the rest
    ("  lead \\boxed{   }  ", "lead \\boxed{   }"),                     # empty: the whole text stripped
    ("  no marker  ", "no marker"),
    ("\\boxed{UNKNOWN}", "UNKNOWN"),
])
def test_extract_boxed_answer_worked(text, expected):
    assert c.extract_boxed_answer(text) == expected


@pytest.mark.parametrize("text, expected", [("UNKNOWN", True), (" unknown\n", True), ("Unknown.", False),
                                            ("un known", False), ("", False)])
def test_is_unknown(text, expected):
    assert c.is_unknown(text) is expected


@pytest.mark.parametrize("pred, gold, expected", [
    ("Blue and red.", "red, blue", True),
    ("redblue", "red, blue", False),                                     # whole words only
    ("a b c", "a-b", True),                                              # hyphen normalized on both sides
    ("x", "x; x", True),                                                 # deduplicated
    ("", "x", False),
    ("anything", " , ;", False),                                         # no phrase
    ("the admin panel", "Admin Panel", True),
    ("adminpanel", "admin panel", False),
])
def test_norm_phrase_set_match_worked(pred, gold, expected):
    assert c.norm_phrase_set_match(pred, gold) is expected


@pytest.mark.parametrize("pred, gold, expected", [
    ("first a then b", "a, b", True),
    ("first b then a", "a, b", False),
    ("x", "x, x", False),                                                # a repeated phrase must repeat
    ("x and x", "x, x", True),
    ("ab a b", "a b, b", False),                                         # matches do not overlap
    ("a b b", "a b, b", True),
])
def test_norm_phrase_set_match_ordered_worked(pred, gold, expected):
    assert c.norm_phrase_set_match_ordered(pred, gold) is expected


def test_phrase_options():
    assert c.norm_phrase_set_match("red and blue", "red/blue", separators=["/"]) is True
    assert c.norm_phrase_set_match("red and blue", "red/blue", separators=[]) is False   # one phrase "redblue"
    assert c.norm_phrase_set_match("", "", require_non_empty=False) is True              # vacuous
    assert c.norm_phrase_set_match("Red", "red", lower=False) is False


@pytest.mark.parametrize("pred, gold, expected", [
    ("\\boxed{B}", "B", True),
    ("Option B.", "b", True),
    ("options B", "B", False),                                           # plurals are not removed
    ("The answer is \\boxed{choice C} and \\boxed{D}", "c", True),       # the first flat box
    ("\\boxed{\\text{B}}", "B", False),                                  # no nested braces in the box
    ("B", " b ", True),
    ("", "", False),
])
def test_mc_choice_match_worked(pred, gold, expected):
    assert c.mc_choice_match(pred, gold) is expected


def test_mc_choice_match_options():
    assert c.mc_choice_match("(B)", "B", strip_chars="()") is True
    assert c.mc_choice_match("(B)", "B") is False
    assert c.mc_choice_match("", "", require_non_empty=False) is True
    assert c.mc_choice_match(None, "B") is False
    assert c.mc_choice_match("B", "B", separators=[","], lower=False) is True  # other keywords ignored


@pytest.mark.parametrize("pred, gold, expected", [
    ("A and C", "C, A", True),
    ("Final answer: options B, D", "BD", True),
    ("The answer is B", "B", False),                                     # T, H, E, B
    ("a c", "AC", True),
    ("", "A", False),
    ("123", "A", False),
])
def test_mc_choice_set_match_worked(pred, gold, expected):
    assert c.mc_choice_set_match(pred, gold) is expected


def test_parse_eval_function_value_typing():
    name, kw = c.parse_eval_function(
        " norm_phrase_set_match | lower=TRUE |strip_punct=false| a=None | b=null | c=1.5 | d=-3 | e=1.2.3 "
        "| f=abc | g= | separators=, ; | ||")
    assert name == "norm_phrase_set_match"
    assert kw == {"lower": True, "strip_punct": False, "a": None, "b": None, "c": 1.5, "d": -3, "e": "1.2.3",
                  "f": "abc", "g": "", "separators": [",", ";"]}
    assert type(kw["c"]) is float and type(kw["d"]) is int
    assert c.parse_eval_function("mc_choice_match|separators=")[1] == {"separators": []}
    assert c.parse_eval_function('mc_choice_match|separators=["and", "or"]')[1] == {"separators": ["and", "or"]}
    assert c.parse_eval_function("mc_choice_match|separator=a b")[1] == {"separator": ["a", "b"]}
    assert c.parse_eval_function("mc_choice_match|separators=true")[1] == {"separators": True}
    assert c.parse_eval_function("mc_choice_match|x=a=b")[1] == {"x": "a=b"}


@pytest.mark.parametrize("spec, needle", [
    ("", "non-empty"),
    ("no_such_checker", "unknown checker 'no_such_checker'"),
    ("is_unknown", "unknown checker"),  # a callable of upstream's module, but not a checker
    ("|lower=true", "checker name (before the first '|') is empty"),
    ("   ", "non-empty string"),
    ("mc_choice_match|strip", "'strip' is not key=value"),
    ("mc_choice_match|=3", "not key=value"),
    ("mc_choice_match|a=1|a=2", "'a' is given twice"),
    ("norm_phrase_set_match|separators=[x]", "not a JSON list"),
])
def test_parse_eval_function_errors_name_the_spec(spec, needle):
    with pytest.raises(ConfigError) as err:
        c.parse_eval_function(spec)
    assert needle in str(err.value) and repr(spec) in str(err.value)
    with pytest.raises(InputError) as err:
        c.parse_eval_function(spec, file="questions.jsonl", record="q-7")
    assert "questions.jsonl: q-7: field 'eval_function'" in str(err.value)


def test_parse_eval_function_rejects_non_string():
    with pytest.raises(ConfigError):
        c.parse_eval_function(None)


def test_score_to_bool():
    assert c.score_to_bool(True) is True and c.score_to_bool(0) is False and c.score_to_bool(1.0) is True
    for bad in (2, 0.5, "1", None):
        with pytest.raises(PluginError, match="non-binary"):
            c.score_to_bool(bad)


def test_score_deterministic_follows_the_harness():
    assert c.score_deterministic("norm_phrase_set_match", {}, "red", "red") is True
    assert c.score_deterministic("norm_phrase_set_match", {}, "UNKNOWN", "unknown") is False   # unknown scores 0
    assert c.score_deterministic("mc_choice_match", {"strip_chars": "()"}, "(b)", "B") is True
    assert c.score_deterministic("mc_choice_set_match", {"strip_chars": 5}, "a", "A") is True  # ignored
    with pytest.raises(ConfigError, match="LLM checker"):
        c.score_deterministic("llm_gotchas_checker", {}, "x", "y")
    with pytest.raises(ConfigError, match="not a deterministic checker"):
        c.score_deterministic("nope", {}, "x", "y")
    with pytest.raises(ConfigError, match="unknown option.*separator"):          # upstream: TypeError
        c.score_deterministic("norm_phrase_set_match", {"separator": [","]}, "x", "x")
    with pytest.raises(ConfigError, match="separators must be"):
        c.score_deterministic("norm_phrase_set_match_ordered", {"separators": True}, "x", "x")
    with pytest.raises(ConfigError, match="strip_chars must be"):
        c.score_deterministic("mc_choice_match", {"strip_chars": None}, "x", "x")


@pytest.mark.task("longmemeval-v2", "Premise awareness")
def test_abstention_is_by_eval_function():
    assert c.is_abstention_problem("llm_abstention_checker") is True
    assert c.is_abstention_problem("llm_gotchas_checker") is False
    assert c.eval_name(" llm_abstention_checker | x=1") == "llm_abstention_checker"
    assert c.LLM_CHECKERS == {"llm_abstention_checker", "llm_gotchas_checker"}
    assert set(c.DETERMINISTIC_CHECKERS) == {"norm_phrase_set_match", "norm_phrase_set_match_ordered",
                                             "mc_choice_match", "mc_choice_set_match"}


def test_harness_keywords_override_spec_options():
    merged = c.with_harness_overrides("llm_abstention_checker",
                                      {"evaluator_model": "spec-model", "evaluator_temperature": 0.0},
                                      {"evaluator_model": "gpt-5.2", "model_response": "raw"})
    assert merged == {"evaluator_model": "gpt-5.2", "evaluator_temperature": 0.0, "model_response": "raw"}
    with pytest.raises(ConfigError, match="no keywords to deterministic"):
        c.with_harness_overrides("mc_choice_match", {}, {"evaluator_model": "m"})
    with pytest.raises(ConfigError, match="not a harness keyword"):
        c.with_harness_overrides("llm_gotchas_checker", {}, {"temperature": 1})


# ------------------------------------------------------------------ naive second implementations

def naive_is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def naive_normalize(text, lower=True, hyphen=True, punct=True) -> str:
    text = "" if text is None else str(text)
    if lower:
        text = text.lower()
    out = []
    for ch in text:
        if ch in ",;" or (hyphen and ch in "-_"):
            out.append(" ")
        elif punct and not (naive_is_word(ch) or ch.isspace()):
            continue
        else:
            out.append(ch)
    words, cur = [], ""
    for ch in "".join(out):
        if ch.isspace():
            if cur:
                words.append(cur)
            cur = ""
        else:
            cur += ch
    return " ".join(words + ([cur] if cur else []))


def naive_split(text, seps, **flags) -> list[str]:
    pieces, cur, i = [], "", 0
    while i < len(text):
        hit = next((s for s in seps if text.startswith(s, i)), None)
        if hit:
            pieces.append(cur)
            cur, i = "", i + len(hit)
        else:
            cur, i = cur + text[i], i + 1
    pieces.append(cur)
    return [p for p in (naive_normalize(x, **flags) for x in pieces) if p]


def find_words(hay: list[str], needle: list[str], start: int) -> int:
    for i in range(start, len(hay) - len(needle) + 1):
        if hay[i:i + len(needle)] == needle:
            return i
    return -1


def naive_set_match(pred, gold, seps=(",", ";"), ordered=False) -> bool:
    words = naive_normalize(pred).split(" ") if naive_normalize(pred) else []
    phrases = naive_split(gold, seps)
    if not words or not phrases:
        return False
    if not ordered:
        return all(find_words(words, p.split(" "), 0) >= 0 for p in phrases)
    pos = 0
    for p in phrases:
        at = find_words(words, p.split(" "), pos)
        if at < 0:
            return False
        pos = at + len(p.split(" "))
    return True


def naive_boxed(text: str) -> str:
    marker, last = "\\boxed{", -1
    for i in range(len(text)):
        if text[i:i + len(marker)] == marker:
            last = i
    if last < 0:
        return text.strip()
    depth, body = 1, []
    for ch in text[last + len(marker):]:
        depth += 1 if ch == "{" else -1 if ch == "}" else 0
        if depth == 0:
            break
        body.append(ch)
    return "".join(body).strip() or text.strip()


def naive_remove_words(text: str, words: set[str]) -> str:
    out, i = [], 0
    while i < len(text):
        if (i == 0 or not naive_is_word(text[i - 1])):
            hit = next((w for w in words if text[i:i + len(w)].lower() == w
                        and (i + len(w) == len(text) or not naive_is_word(text[i + len(w)]))), None)
            if hit:
                i += len(hit)
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def naive_mc(pred: str, gold: str, strip=".") -> bool:
    low, cand = pred.lower(), pred
    at = low.find("\\boxed{")
    while at >= 0:
        close = low.find("}", at + 7)
        if close >= 0:
            cand = low[at + 7:close]
            break
        at = low.find("\\boxed{", at + 1)
    cand = naive_remove_words(cand, {"choice", "option"})
    cand = "".join(ch for ch in cand if ch not in strip).strip().upper()
    return bool(cand) and bool(gold.strip()) and cand == gold.strip().upper()


def naive_letters(text: str) -> set[str]:
    fillers = {"AND", "ANSWER", "ANSWERS", "CHOICE", "CHOICES", "FINAL", "LETTER", "LETTERS", "OPTION", "OPTIONS"}
    letters, run = set(), ""
    for ch in text.upper() + " ":
        if "A" <= ch <= "Z":
            run += ch
            continue
        if run and run not in fillers:
            letters |= set(run)
        run = ""
    return letters


def naive_mc_set(pred: str, gold: str) -> bool:
    p, g = naive_letters(pred), naive_letters(gold)
    return bool(p) and bool(g) and p == g


UNICODE_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


def pieces(alphabet: list[str], max_size: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(alphabet), max_size=max_size).map("".join)


WORDY = pieces(list("abcAB -_,;.!'é1\t") + ["red", "blue", " a-b ", "x_y"], 12)
MC_TEXT = pieces(list("abcdABCD .,(){}\\") + ["\\boxed{", "choice ", "Option ", "options", "and ", "ANSWER ",
                                               "final "], 10)


@settings(max_examples=400, deadline=None)
@given(UNICODE_TEXT, st.booleans(), st.booleans(), st.booleans())
def test_normalize_equals_naive(text, lower, hyphen, punct):
    assert c.normalize(text, lower=lower, normalize_hyphen=hyphen, strip_punct=punct) == \
        naive_normalize(text, lower, hyphen, punct)


@settings(max_examples=300, deadline=None)
@given(UNICODE_TEXT, st.lists(st.sampled_from([",", ";", "/", "and", "||"]), max_size=3), st.booleans())
def test_split_phrases_equals_naive(text, seps, hyphen):
    seps = sorted(set(seps), key=lambda s: -len(s))  # naive takes the first listed hit; make it the longest
    assert c.split_phrases(text, separators=seps, normalize_hyphen=hyphen) == naive_split(text, seps, hyphen=hyphen)


@settings(max_examples=400, deadline=None)
@given(WORDY, WORDY)
def test_phrase_matchers_equal_naive(pred, gold):
    assert c.norm_phrase_set_match(pred, gold) == naive_set_match(pred, gold)
    assert c.norm_phrase_set_match_ordered(pred, gold) == naive_set_match(pred, gold, ordered=True)


@settings(max_examples=400, deadline=None)
@given(pieces(list("ab{} \\") + ["\\boxed{", "\\box"], 14))
def test_extract_boxed_equals_naive(text):
    assert c.extract_boxed_answer(text) == naive_boxed(text)


@settings(max_examples=400, deadline=None)
@given(MC_TEXT, st.sampled_from(["a", "B", " c ", "AB", "", "choice"]))
def test_mc_choice_match_equals_naive(pred, gold):
    assert c.mc_choice_match(pred, gold) == naive_mc(pred, gold)


@settings(max_examples=400, deadline=None)
@given(MC_TEXT, MC_TEXT)
def test_mc_choice_set_match_equals_naive(pred, gold):
    assert c.mc_choice_set_match(pred, gold) == naive_mc_set(pred, gold)


PLAIN_VALUES = {"true": True, "False": False, "none": None, "NULL": None, "1.5": 1.5, "7": 7, "-2": -2,
                "x.y": "x.y", "abc": "abc", "": ""}
SEPARATOR_VALUES = {"true": True, "False": False, "none": None, "NULL": None, "1.5": ["1", ".", "5"], "7": ["7"],
                    "-2": ["-", "2"], "x.y": ["x", ".", "y"], "abc": ["a", "b", "c"], "": []}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(c.KNOWN_CHECKERS)),
       st.dictionaries(st.sampled_from(["lower", "separators", "separator", "strip_chars", "k_1"]),
                       st.sampled_from(sorted(PLAIN_VALUES)), max_size=4))
def test_spec_value_typing_table(name, options):
    spec = name + "".join(f"| {k} = {v} " for k, v in options.items())
    table = {k: (SEPARATOR_VALUES if k.startswith("separator") else PLAIN_VALUES)[v] for k, v in options.items()}
    assert c.parse_eval_function(spec) == (name, table)
