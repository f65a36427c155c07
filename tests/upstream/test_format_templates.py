"""The parse-only reader of ``str.format`` templates and of the branch tests that choose them (the
engine V1's judge-prompt extraction uses): exact texts, the conditions on each path, and nothing run."""

from __future__ import annotations

import ast
import textwrap

from mnemetric.upstream import literals as lit

SOURCE = textwrap.dedent('''\
    raise SystemExit("executed!")

    KINDS = ("a", "b")
    MIXED = ["a", 1]

    def choose(kind, x, flag=False, *, extra=None):
        if flag:
            return "flag {}".format(x)
        elif kind in KINDS or kind == "c":
            t = "ab" "c {}"
        elif not kind != "d":
            t: str = "d {}" + "!"
        else:
            for _ in range(1):
                t = "loop {}"
            def inner():
                return "inner {}".format(1)
        u = "never formatted {}"
        return t.format(x)

    def other():
        pass
''')


def _tree() -> ast.Module:
    return lit.parse(SOURCE, "s.py")


def test_functions_and_parameters():
    funcs = lit.all_functions(_tree())
    assert [f.name for f in funcs] == ["choose", "other", "inner"]
    assert lit.parameters(funcs[0]) == ["kind", "x", "flag", "extra"]


def test_formatted_literals_with_the_tests_on_their_path():
    choose = lit.find_function(_tree(), "choose", "s.py")
    assert lit.format_receivers(choose) == {"t"}
    found = [(text, [(ast.unparse(test), truth) for test, truth in conds])
             for text, conds in lit.formatted_literals(choose)]
    assert found == [
        ("flag {}", [("flag", True)]),
        ("abc {}", [("flag", False), ("kind in KINDS or kind == 'c'", True)]),
        ("d {}!", [("flag", False), ("kind in KINDS or kind == 'c'", False), ("not kind != 'd'", True)]),
        ("loop {}", [("flag", False), ("kind in KINDS or kind == 'c'", False), ("not kind != 'd'", False)]),
    ]  # "inner {}" is in a nested function, "never formatted {}" is bound to a name never .format-ed


def _test(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def test_implied_bool():
    assert lit.implied_bool(_test("flag"), "flag", True) is True
    assert lit.implied_bool(_test("not flag"), "flag", True) is False
    assert lit.implied_bool(_test("flag == False"), "flag", False) is True
    assert lit.implied_bool(_test("flag is not True"), "flag", True) is False
    assert lit.implied_bool(_test("flag < True"), "flag", True) is None
    assert lit.implied_bool(_test("other"), "flag", True) is None


def test_compared_strings():
    constants = lit.module_string_collections(_tree())
    assert constants == {"KINDS": frozenset({"a", "b"})}  # MIXED holds a number: not a string collection
    assert lit.compared_strings(_test("kind in KINDS or kind == 'c'"), "kind", constants) == (
        frozenset({"a", "b", "c"}), True)
    assert lit.compared_strings(_test("'d' != kind"), "kind", constants) == (frozenset({"d"}), False)
    assert lit.compared_strings(_test("kind not in ['x', 'y']"), "kind", constants) == (frozenset({"x", "y"}), False)
    assert lit.compared_strings(_test("kind in MIXED"), "kind", constants) is None
    assert lit.compared_strings(_test("kind == 'a' or kind != 'b'"), "kind", constants) is None
    assert lit.compared_strings(_test("other == 'a'"), "kind", constants) is None
