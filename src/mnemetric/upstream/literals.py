"""Read string constants out of Python source by parsing it; nothing in the source ever runs.

The source is turned into a syntax tree with :func:`ast.parse` (which only tokenizes and parses)
and string LITERALS are evaluated with :func:`ast.literal_eval` — never ``exec``, ``eval``,
``compile`` or ``import``. A value built by anything other than literals (a call, a name, a
subscript, ``%`` or ``.format``) is refused with an error naming the file and the constant.

Supported shapes, each the way Python itself would evaluate the literal (so escape sequences come
out exactly as at run time: ``"\\b"`` in a normal string is U+0008):

* a string literal, implicitly concatenated pieces (one constant after parsing), and ``+`` of
  string literals;
* a dict display whose keys and values are all such strings;
* an f-string (possibly implicitly concatenated with plain strings) whose replacement fields are
  bare names with no conversion and no format spec: a :class:`Template`.

Lookups: a module-level assignment by name, a module-level function by name, an assignment (``=``)
or augmentation (``+=``) of a local name inside a function, and a function's returned literal.

Format templates: the string literals a function uses with ``str.format`` (:func:`formatted_literals`),
each with the if/elif/else tests on its path, and readers of such tests (:func:`implied_bool`,
:func:`compared_strings`), so a caller can tell which branch chooses which template.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from mnemetric.errors import UpstreamFormatError

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Field:
    """A replacement field ``{name}`` of an f-string template."""

    name: str


@dataclass(frozen=True)
class Template:
    """An f-string read by parsing: literal text pieces and bare-name fields, in order."""

    parts: tuple[str | Field, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        """Field names in order of appearance (a name may repeat)."""
        return tuple(p.name for p in self.parts if isinstance(p, Field))

    @property
    def is_plain(self) -> bool:
        """True if the template has no field (it is just a string)."""
        return not self.fields

    def fill(self, values: Mapping[str, str]) -> str:
        """The f-string's value with each field replaced by ``values[name]`` (which must be a str).

        For a str value, ``f"{x}"`` is ``x`` itself, so plain concatenation reproduces the f-string.
        """
        missing = sorted(set(self.fields) - set(values))
        extra = sorted(set(values) - set(self.fields))
        if missing or extra:
            raise ValueError(f"template fields {list(self.fields)}: missing {missing}, unexpected {extra}")
        out = []
        for part in self.parts:
            if isinstance(part, Field):
                value = values[part.name]
                if not isinstance(value, str):
                    raise TypeError(f"field {part.name!r} needs a str, got {type(value).__name__}")
                out.append(value)
            else:
                out.append(part)
        return "".join(out)

    def to_record(self) -> list[str | dict[str, str]]:
        """JSON form: text pieces as strings, fields as ``{"field": name}``."""
        return [{"field": p.name} if isinstance(p, Field) else p for p in self.parts]


def parse(source: str, filename: str) -> ast.Module:
    """Parse ``source`` (never run it); a syntax error becomes an UpstreamFormatError naming the file."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. SyntaxWarning for odd escapes: the values stay exact
            return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise UpstreamFormatError(filename, f"cannot parse as Python ({exc.msg}, line {exc.lineno})") from None


# --------------------------------------------------------------------------- evaluating literals


def string_value(node: ast.AST | None) -> str | None:
    """The value of a string literal or ``+`` of string literals, else None (never evaluates anything else)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        value = ast.literal_eval(node)
        return value if isinstance(value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = string_value(node.left), string_value(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def template_value(node: ast.AST | None) -> Template | None:
    """A :class:`Template` for a string literal or an f-string of bare-name fields (or ``+`` of them), else None."""
    text = string_value(node)
    if text is not None:
        return Template((text,))
    if isinstance(node, ast.JoinedStr):
        parts: list[str | Field] = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if not isinstance(value.value, ast.Name) or value.conversion != -1 or value.format_spec is not None:
                    return None
                parts.append(Field(value.value.id))
            else:
                piece = string_value(value)
                if piece is None:
                    return None
                parts.append(piece)
        return Template(_merge(parts))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template_value(node.left), template_value(node.right)
        if left is not None and right is not None:
            return Template(_merge([*left.parts, *right.parts]))
    return None


def _merge(parts: list[str | Field]) -> tuple[str | Field, ...]:
    """Join adjacent text pieces and drop empty ones, so equal f-strings give equal templates."""
    out: list[str | Field] = []
    for part in parts:
        if isinstance(part, str):
            if not part:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += part
                continue
        out.append(part)
    return tuple(out)


def string_dict_value(node: ast.AST | None) -> dict[str, str] | None:
    """A dict display whose keys and values are all string literals, else None (no ``**``, no duplicates)."""
    if not isinstance(node, ast.Dict):
        return None
    out: dict[str, str] = {}
    for key_node, value_node in zip(node.keys, node.values):
        key, value = string_value(key_node), string_value(value_node)
        if key is None or value is None or key in out:
            return None
        out[key] = value
    return out


# --------------------------------------------------------------------------- finding things by name


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return [stmt.target]
    return []


def module_assignment(tree: ast.Module, name: str, filename: str) -> ast.expr:
    """The value assigned to ``name`` at module level; error if absent or assigned more than once."""
    values = [stmt.value for stmt in tree.body if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign))
              and any(isinstance(t, ast.Name) and t.id == name for t in _targets(stmt))]
    if len(values) != 1 or values[0] is None:
        raise UpstreamFormatError(filename, f"expected one module-level assignment to {name}; found {len(values)}")
    return values[0]


def module_string(tree: ast.Module, name: str, filename: str) -> str:
    """The module-level string constant ``name``."""
    value = string_value(module_assignment(tree, name, filename))
    if value is None:
        raise UpstreamFormatError(filename, f"{name} is not a string literal")
    return value


def module_string_dict(tree: ast.Module, name: str, filename: str) -> dict[str, str]:
    """The module-level dict of string constants ``name``."""
    value = string_dict_value(module_assignment(tree, name, filename))
    if value is None:
        raise UpstreamFormatError(filename, f"{name} is not a dict of string literals")
    return value


def find_function(tree: ast.Module, name: str, filename: str) -> FunctionNode:
    """The module-level function ``name`` (exactly one)."""
    found = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    if len(found) != 1:
        raise UpstreamFormatError(filename, f"expected one module-level function {name}(); found {len(found)}")
    return found[0]


def own_statements(func: FunctionNode) -> Iterator[ast.stmt]:
    """Every statement of ``func`` in source order, inside if/for/while/with/try blocks, but not in
    nested functions or classes."""
    def walk(stmts: list[ast.stmt]) -> Iterator[ast.stmt]:
        for stmt in stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            yield stmt
            for block in ("body", "orelse", "finalbody"):
                yield from walk(getattr(stmt, block, []) or [])
            for handler in getattr(stmt, "handlers", []) or []:
                yield from walk(handler.body)
            for case in getattr(stmt, "cases", []) or []:
                yield from walk(case.body)
    return walk(func.body)


def local_assignments(func: FunctionNode, name: str, *, augmented: bool = False) -> list[ast.expr]:
    """Values bound to the local ``name`` by ``=`` (or, with ``augmented``, by ``+=``), in source order."""
    out = []
    for stmt in own_statements(func):
        is_aug = isinstance(stmt, ast.AugAssign)
        if is_aug != augmented or (is_aug and not isinstance(stmt.op, ast.Add)):
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in _targets(stmt)) and stmt.value is not None:
            out.append(stmt.value)
    return out


def local_string(func: FunctionNode, name: str, filename: str, *, augmented: bool = False) -> str:
    """The one string literal bound to local ``name`` in ``func`` (by ``=``, or ``+=`` with ``augmented``)."""
    values = local_assignments(func, name, augmented=augmented)
    texts = [string_value(v) for v in values]
    op = "+=" if augmented else "="
    if len(texts) != 1 or texts[0] is None:
        raise UpstreamFormatError(filename, f"{func.name}(): expected one `{name} {op} <string literal>`; "
                             f"found {len(values)} assignment(s), {sum(t is not None for t in texts)} literal")
    return texts[0]


def local_template(func: FunctionNode, name: str, filename: str) -> Template:
    """The one string / f-string template assigned to local ``name`` in ``func``."""
    values = local_assignments(func, name)
    templates = [template_value(v) for v in values]
    if len(templates) != 1 or templates[0] is None:
        raise UpstreamFormatError(filename, f"{func.name}(): expected one `{name} = <string or f-string of names>`; "
                             f"found {len(values)} assignment(s)")
    return templates[0]


def returned_string(tree: ast.Module, func_name: str, filename: str) -> str:
    """The f-string-free literal that module-level ``func_name`` returns (its only ``return``),
    directly or through a local name bound once to a literal."""
    func = find_function(tree, func_name, filename)
    returns = [s for s in own_statements(func) if isinstance(s, ast.Return)]
    if len(returns) != 1:
        raise UpstreamFormatError(filename, f"{func_name}(): expected one return statement; found {len(returns)}")
    node = returns[0].value
    if isinstance(node, ast.Name):
        return local_string(func, node.id, filename)
    value = string_value(node)
    if value is None:
        raise UpstreamFormatError(filename, f"{func_name}() does not return a string literal")
    return value


# --------------------------------------------------------------------------- format templates and their branches


Condition = tuple[ast.expr, bool]
"""An if-test on the path to a statement, and whether the path takes its true branch."""


def all_functions(tree: ast.AST) -> list[FunctionNode]:
    """Every function definition in ``tree``, nested ones included, in :func:`ast.walk` order."""
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def parameters(func: FunctionNode) -> list[str]:
    """The names of ``func``'s positional-only, ordinary and keyword-only parameters, in that order."""
    a = func.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def format_receivers(func: ast.AST) -> set[str]:
    """Names ``X`` used as ``X.format(...)`` anywhere in ``func``."""
    return {n.func.value.id for n in ast.walk(func)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "format"
            and isinstance(n.func.value, ast.Name)}


def formatted_literals(func: FunctionNode) -> Iterator[tuple[str, tuple[Condition, ...]]]:
    """(text, conditions) for every string literal of ``func`` used as a ``str.format`` template —
    ``"...".format(...)`` directly, or bound by ``=`` to a name that is ``.format``-ed anywhere in the
    function — with the if/elif/else tests on its path (not inside nested functions or classes)."""
    return _formatted(func.body, (), format_receivers(func))


def _formatted(stmts: list[ast.stmt], conds: tuple[Condition, ...], receivers: set[str]
               ) -> Iterator[tuple[str, tuple[Condition, ...]]]:
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            yield from _formatted(stmt.body, (*conds, (stmt.test, True)), receivers)
            yield from _formatted(stmt.orelse, (*conds, (stmt.test, False)), receivers)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
            for block in ("body", "orelse", "finalbody"):
                yield from _formatted(getattr(stmt, block, []), conds, receivers)
            for handler in getattr(stmt, "handlers", []):
                yield from _formatted(handler.body, conds, receivers)
        else:
            for text in _formatted_in_statement(stmt, receivers):
                yield text, conds


def _formatted_in_statement(stmt: ast.stmt, receivers: set[str]) -> Iterator[str]:
    """Literals assigned (``=``) to a ``.format``-ed name, and literals ``.format``-ed directly."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        text = string_value(stmt.value)
        if text is not None and any(isinstance(t, ast.Name) and t.id in receivers for t in _targets(stmt)):
            yield text
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            text = string_value(node.func.value)
            if text is not None:
                yield text


def implied_bool(test: ast.expr, name: str, truth: bool) -> bool | None:
    """The value of the boolean ``name`` implied by taking the ``truth`` branch of ``test`` — for
    ``name``, ``not name`` and ``name ==/!=/is/is not True/False`` — else None (the test is not about it)."""
    if isinstance(test, ast.Name) and test.id == name:
        return truth
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return implied_bool(test.operand, name, not truth)
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and test.left.id == name and isinstance(test.comparators[0], ast.Constant)
            and isinstance(test.comparators[0].value, bool)):
        equal = isinstance(test.ops[0], (ast.Eq, ast.Is))
        if not equal and not isinstance(test.ops[0], (ast.NotEq, ast.IsNot)):
            return None
        return test.comparators[0].value if equal == truth else not test.comparators[0].value
    return None


def compared_strings(test: ast.expr, name: str, constants: Mapping[str, frozenset[str]]
                     ) -> tuple[frozenset[str], bool] | None:
    """(values, positive) for ``name == 'x'`` (either side), ``name in [...]`` (a literal collection or a
    name of ``constants``), their negations (positive False) and an ``or`` of positive ones; else None."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        parts = [compared_strings(v, name, constants) for v in test.values]
        if parts and all(p is not None and p[1] for p in parts):
            return frozenset().union(*(p[0] for p in parts)), True
        return None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(right, ast.Name) and right.id == name and isinstance(op, (ast.Eq, ast.NotEq)):
        left, right = right, left
    if not (isinstance(left, ast.Name) and left.id == name):
        return None
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        return frozenset({right.value}), isinstance(op, ast.Eq)
    if isinstance(op, (ast.In, ast.NotIn)):
        values = constants.get(right.id) if isinstance(right, ast.Name) else string_collection(right)
        if values is not None:
            return values, isinstance(op, ast.In)
    return None


def string_collection(node: ast.AST | None) -> frozenset[str] | None:
    """The values of a list/tuple/set display made only of string literals, else None."""
    if not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return None
    values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return frozenset(values) if len(values) == len(node.elts) else None


def module_string_collections(tree: ast.Module) -> dict[str, frozenset[str]]:
    """Module-level ``NAME = [...]`` (or tuple / set) string collections, by name."""
    out: dict[str, frozenset[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            values = string_collection(stmt.value)
            if values is not None:
                out[stmt.targets[0].id] = values
    return out
