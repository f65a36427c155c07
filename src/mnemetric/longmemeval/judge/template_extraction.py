"""The five judge templates of upstream ``evaluate_qa.py``, found by static analysis (:mod:`ast`) only.

Parity source: xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py @ 9e0b455f (shared/docs/upstream-protocol.md
§3.2): the templates are string literals inside ``get_anscheck_prompt(task, question, answer, response,
abstention=False)``, chosen by if/elif on ``abstention`` and ``task`` and filled positionally with
(question, answer, response). The source is parsed, never executed, evaluated or imported. Split from
:mod:`mnemetric.longmemeval.judge.upstream_prompts`; import these names from here.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Iterator, Mapping

from mnemetric.errors import UpstreamFormatError
from mnemetric.longmemeval.judge.upstream_file import PATH, REVISION

FUNCTION_NAME = "get_anscheck_prompt"
TEMPLATE_KEYS = ("abstention", "default", "temporal-reasoning", "knowledge-update", "single-session-preference")
DEFAULT_TASKS = frozenset({"single-session-user", "single-session-assistant", "multi-session"})
TYPE_TO_KEY: Mapping[str, str] = {
    "single-session-user": "default",
    "single-session-assistant": "default",
    "multi-session": "default",
    "temporal-reasoning": "temporal-reasoning",
    "knowledge-update": "knowledge-update",
    "single-session-preference": "single-session-preference",
}
ALL_TASKS = frozenset(TYPE_TO_KEY)


# --------------------------------------------------------------------------- extracting templates


def extract_templates(source_text: str, *, filename: str = PATH) -> dict[str, str]:
    """Find the five judge templates in upstream ``evaluate_qa.py`` source, by static analysis only.

    Parity source: xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py @ 9e0b455f. The source is
    parsed with :func:`ast.parse`; nothing in it runs. Inside the prompt function every string
    literal that is ``.format``-ed (directly, or via a variable that is ``.format``-ed anywhere in
    the function) is a template; the if/elif/else tests on the path to it decide its key (see
    :func:`_classify`). Raises UpstreamFormatError naming what is missing, ambiguous or malformed.
    """
    try:
        tree = ast.parse(source_text, filename=filename)
    except SyntaxError as exc:
        raise UpstreamFormatError(filename, f"cannot parse as Python ({exc.msg}, line {exc.lineno})") from None
    func = _find_prompt_function(tree, filename)
    task_var, abs_var = _parameter_names(func, filename)
    receivers = _format_receivers(func)
    constants = _string_list_constants(tree)
    found: dict[str, str] = {}
    unclassified = 0
    for text, conds in _branch_templates(func.body, (), receivers):
        key = _classify(conds, task_var, abs_var, constants)
        if key is None:
            unclassified += 1
        elif found.setdefault(key, text) != text:
            raise UpstreamFormatError(filename, f"{FUNCTION_NAME}: two different templates select key '{key}'")
    missing = [k for k in TEMPLATE_KEYS if k not in found]
    if missing:
        raise UpstreamFormatError(
            filename, f"{FUNCTION_NAME}: no template found for {', '.join(missing)} "
            f"(found: {', '.join(found) or 'none'}; {unclassified} template(s) with an unrecognised selecting "
            f"condition)\n  fix: the file does not have the pinned upstream shape; use revision {REVISION}"
        )
    for key in TEMPLATE_KEYS:
        check_template_fields(key, found[key], filename)
    return {k: found[k] for k in TEMPLATE_KEYS}


def check_template_fields(key: str, template: str, filename: str = PATH) -> None:
    """Require exactly three automatic positional ``{}`` fields (question, answer, response)."""
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise UpstreamFormatError(filename, f"template '{key}' is not a valid format string ({exc})") from None
    if len(names) != 3 or any(name != "" for name in names):
        shown = ", ".join("{" + n + "}" for n in names) or "none"
        raise UpstreamFormatError(
            filename, f"template '{key}' has {len(names)} replacement field(s) ({shown}); "
            "expected exactly 3 positional '{}' fields (question, answer, response)"
        )


def _find_prompt_function(tree: ast.Module, filename: str) -> ast.FunctionDef:
    """The function named get_anscheck_prompt, else the only function with an ``abstention`` parameter."""
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    named = [f for f in funcs if f.name == FUNCTION_NAME]
    if len(named) == 1:
        return named[0]
    candidates = [f for f in funcs if "abstention" in _all_params(f)]
    if not named and len(candidates) == 1:
        return candidates[0]
    raise UpstreamFormatError(
        filename, f"expected one function {FUNCTION_NAME}(task, question, answer, response, abstention=False); "
        f"found {len(named)} with that name and {len(candidates)} with an 'abstention' parameter"
    )


def _all_params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = func.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def _parameter_names(func: ast.FunctionDef | ast.AsyncFunctionDef, filename: str) -> tuple[str, str]:
    """(task parameter = first positional, abstention parameter = the one named ``abstention``)."""
    params = _all_params(func)
    if not params or "abstention" not in params:
        raise UpstreamFormatError(filename, f"{func.name} has no 'abstention' parameter (parameters: {params})")
    return params[0], "abstention"


def _format_receivers(func: ast.AST) -> set[str]:
    """Names ``X`` used as ``X.format(...)`` anywhere in the function."""
    return {
        n.func.value.id
        for n in ast.walk(func)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "format"
        and isinstance(n.func.value, ast.Name)
    }


def _string_value(node: ast.AST | None) -> str | None:
    """A string literal's value; ``"a" "b"`` is already one Constant, ``"a" + "b"`` is folded here."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string_value(node.left), _string_value(node.right)
        if left is not None and right is not None:
            return left + right
    return None


Cond = tuple[ast.expr, bool]
"""An if-test on the path to a statement, and whether the path takes its true branch."""


def _branch_templates(stmts: list[ast.stmt], conds: tuple[Cond, ...], receivers: set[str]
                      ) -> Iterator[tuple[str, tuple[Cond, ...]]]:
    """Yield (template, conditions) for every template literal in ``stmts``, tracking if/elif/else."""
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            yield from _branch_templates(stmt.body, (*conds, (stmt.test, True)), receivers)
            yield from _branch_templates(stmt.orelse, (*conds, (stmt.test, False)), receivers)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
            for block in ("body", "orelse", "finalbody"):
                yield from _branch_templates(getattr(stmt, block, []), conds, receivers)
            for handler in getattr(stmt, "handlers", []):
                yield from _branch_templates(handler.body, conds, receivers)
        else:
            for text in _templates_in_statement(stmt, receivers):
                yield text, conds


def _templates_in_statement(stmt: ast.stmt, receivers: set[str]) -> Iterator[str]:
    """Literals assigned to a ``.format``-ed name, and literals ``.format``-ed directly."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        text = _string_value(stmt.value)
        if text is not None and any(isinstance(t, ast.Name) and t.id in receivers for t in targets):
            yield text
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            text = _string_value(node.func.value)
            if text is not None:
                yield text


def _classify(conds: tuple[Cond, ...], task_var: str, abs_var: str,
              constants: Mapping[str, frozenset[str]] | None = None) -> str | None:
    """Map the conditions on a template's path to a template key, or None if they do not decide one.

    ``abstention`` true on the path → "abstention". Otherwise the task values allowed by the
    ``task == ...`` / ``task in [...]`` tests (true branches intersect; false branches, e.g. a final
    ``else``, exclude from the six types) must be exactly the default trio or one other type.
    """
    abstention: bool | None = None
    allowed: frozenset[str] | None = None
    excluded: set[str] = set()
    for test, truth in conds:
        value = _abstention_value(test, abs_var, truth)
        if value is not None:
            abstention = value
            continue
        tasks = _task_values(test, task_var, constants or {})
        if tasks is None:
            continue
        values, positive = tasks
        if positive == truth:
            allowed = values if allowed is None else allowed & values
        else:
            excluded |= values
    if abstention:
        return "abstention"
    if allowed is None and not excluded:
        return None
    effective = (ALL_TASKS if allowed is None else allowed) - excluded
    if effective == DEFAULT_TASKS:
        return "default"
    if len(effective) == 1 and next(iter(effective)) in TYPE_TO_KEY and next(iter(effective)) not in DEFAULT_TASKS:
        return next(iter(effective))
    return None


def _abstention_value(test: ast.expr, name: str, truth: bool) -> bool | None:
    """The value of ``abstention`` implied by taking the ``truth`` branch of ``test`` (None: not about it)."""
    if isinstance(test, ast.Name) and test.id == name:
        return truth
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _abstention_value(test.operand, name, not truth)
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and test.left.id == name and isinstance(test.comparators[0], ast.Constant)
            and isinstance(test.comparators[0].value, bool)):
        equal = isinstance(test.ops[0], (ast.Eq, ast.Is))
        if not equal and not isinstance(test.ops[0], (ast.NotEq, ast.IsNot)):
            return None
        return test.comparators[0].value if equal == truth else not test.comparators[0].value
    return None


def _task_values(test: ast.expr, name: str, constants: Mapping[str, frozenset[str]]
                 ) -> tuple[frozenset[str], bool] | None:
    """For ``task == 'x'``, ``task in [...]`` (or a module-level list name), their negations and ``or``
    of them: (values, positive)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        parts = [_task_values(v, name, constants) for v in test.values]
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
        values = constants.get(right.id) if isinstance(right, ast.Name) else _string_collection(right)
        if values is not None:
            return values, isinstance(op, ast.In)
    return None


def _string_collection(node: ast.AST | None) -> frozenset[str] | None:
    """The values of a list/tuple/set literal made only of string literals, else None."""
    if not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return None
    values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return frozenset(values) if len(values) == len(node.elts) else None


def _string_list_constants(tree: ast.Module) -> dict[str, frozenset[str]]:
    """Module-level ``NAME = [...]`` string collections (a ``task in NAME`` test may use one)."""
    out: dict[str, frozenset[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            values = _string_collection(stmt.value)
            if values is not None:
                out[stmt.targets[0].id] = values
    return out
