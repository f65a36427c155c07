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
