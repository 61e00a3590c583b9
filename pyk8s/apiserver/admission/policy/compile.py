"""Admission expressions: compiled with the variables of an admission request declared, and evaluated under a
cost budget (upstream: apiserver pkg/admission/plugin/cel compile.go, composition.go, activation.go and
condition.go). Shared by ValidatingAdmissionPolicy and the matchConditions of webhooks.

The environment declares `object`, `oldObject`, `request` and `namespaceObject`; `params` with a paramKind;
`authorizer` and `authorizer.requestResource` where upstream offers them; and, for a policy with
`spec.variables`, each variable as `variables.<name>` typed by what its expression returns (upstream's
composited `variables` object). An expression is evaluated with only the variables it reads, each computed
at most once per evaluation context and charged to the same budget, which stands in for upstream's lazy
variables: a variable that fails only fails the expressions that read it.

The runtime counts no cost itself: each evaluation is charged the cost estimate of its expression over the
actual sizes of the values it reads (pyk8s.cel.checked), against upstream's per-call limit and per-policy
budget.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel

from ....cel import authz, checked, library
from ....cel.environment import CompileError, CostLimitExceeded, EvalError, Program, compile_in
from ....cel.kubetypes import POOL

T = cel.Type
OBJECT, OLD_OBJECT, PARAMS, REQUEST = "object", "oldObject", "params", "request"
NAMESPACE_OBJECT, AUTHORIZER, REQUEST_RESOURCE, VARIABLES = (
    "namespaceObject", "authorizer", "authorizer.requestResource", "variables"
)  # fmt: skip

# apiserver/pkg/apis/cel/config.go
PER_CALL_LIMIT = 1_000_000
RUNTIME_CEL_COST_BUDGET = 10_000_000
RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS = 2_500_000
MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES = 5 * 1024

# What each kind of expression must return (upstream's ReturnTypes), as cel-go names the types.
BOOL_RESULT: tuple[str, ...] = ("bool",)
STRING_RESULT: tuple[str, ...] = ("string",)
AUDIT_RESULT: tuple[str, ...] = ("string", "null_type")
ANY_RESULT: tuple[str, ...] = ()

OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"
_MISSING_VARIABLE = re.compile(r'No value with name "variables\.([A-Za-z_][A-Za-z0-9_]*)" found in Activation')


class OutOfBudget(Exception):
    """The evaluation context's budget is spent: no further expression is evaluated."""


def type_name(t: Any) -> str:
    """A checked type as cel-go prints it (`bool`, `list(string)`, `map(string, dyn)`, `null_type`)."""
    text = t.name().lower().replace("<", "(").replace(">", ")")
    return {"null": "null_type", "google.protobuf.duration": "google.protobuf.Duration",
            "google.protobuf.timestamp": "google.protobuf.Timestamp"}.get(text, text)  # fmt: skip


@dataclass(frozen=True)
class Declarations:
    """Which optional variables an expression may use (upstream: OptionalVariableDeclarations)."""

    has_params: bool = False
    has_authorizer: bool = False


def _base_variables(d: Declarations) -> dict[str, Any]:
    variables: dict[str, Any] = {
        OBJECT: T.DYN,
        OLD_OBJECT: T.DYN,
        # Upstream declares these two as object types; as maps a misspelt field fails when evaluated.
        NAMESPACE_OBJECT: T.Map(T.STRING, T.DYN),
        REQUEST: T.Map(T.STRING, T.DYN),
    }
    if d.has_params:
        variables[PARAMS] = T.DYN
    if d.has_authorizer:
        variables[AUTHORIZER] = authz.AUTHORIZER
        variables[REQUEST_RESOURCE] = authz.RESOURCE_CHECK
    return variables


def _new_env(variables: dict[str, Any]) -> Any:
    return cel.NewEnv(
        POOL,
        config=cel.NewEnvConfigFromYaml(library.RUNTIME_EXTENSIONS),
        variables=variables,
        extensions=[library.kubernetes_extension(), authz.authz_extension()],
    )


@functools.lru_cache(maxsize=8)
def _plain_env(d: Declarations) -> Any:
    return _new_env(_base_variables(d))


def _check_returns(program: Program, returns: tuple[str, ...]) -> None:
    if not returns:
        return
    got = type_name(program.expression.return_type())
    if got in returns:
        return
    if len(returns) == 1:
        raise CompileError(f"must evaluate to {returns[0]} but got {got}")
    raise CompileError(f"must evaluate to one of [{' '.join(returns)}] but got {got}")


def _undefined_variables(program: Program, declared: Iterable[str]) -> None:
    """`variables.x` for an x no variable declares: cel-go's `undefined field` (the runtime's checker cannot
    tell, as `variables` is declared a map)."""
    known = set(declared)
    stack = [program.tree.root]
    while stack:
        n = stack.pop()
        if n.kind == "select" and n.target is not None and n.target.kind == "ident" and n.target.name == VARIABLES:
            if n.name not in known:
                raise CompileError("compilation failed: " + _located(program.source, program.tree.positions.get(n.id, 0),
                                                                     f"undefined field '{n.name}'"))  # fmt: skip
        if n.target is not None:
            stack.append(n.target)
        stack.extend(n.args)
        stack.extend(n.parts.values())


def _located(source: str, offset: int, message: str) -> str:
    """An error at `offset` in cel-go's shape: `ERROR: <input>:line:col: message`, the line and a caret."""
    line_start = source.rfind("\n", 0, offset) + 1
    line_end = source.find("\n", offset)
    line = source[line_start : line_end if line_end >= 0 else len(source)]
    column = offset - line_start
    number = source.count("\n", 0, offset) + 1
    return f"ERROR: <input>:{number}:{column + 1}: {message}\n | {line}\n | {'.' * column}^"


class Compiler:
    """Compiles one policy's expressions: its variables first, in order (each sees those before it), then
    the expressions that may read them all (upstream: CompositedCompiler, or the plain compiler for a policy
    without variables)."""

    def __init__(self, has_params: bool) -> None:
        self.has_params = has_params
        self.composed = False
        self.variable_types: dict[str, Any] = {}  # name -> checked type (dyn when it does not compile)
        self.variables: list[Variable] = []
        self._envs: dict[bool, Any] = {}

    def _env(self, has_authorizer: bool) -> Any:
        d = Declarations(self.has_params, has_authorizer)
        if not self.composed:
            return _plain_env(d)
        env = self._envs.get(has_authorizer)
        if env is None:
            variables = _base_variables(d)
            variables[VARIABLES] = T.Map(T.STRING, T.DYN)
            variables.update({f"{VARIABLES}.{n}": t for n, t in self.variable_types.items()})
            env = self._envs[has_authorizer] = _new_env(variables)
        return env

    def compile(self, source: str, returns: tuple[str, ...], *, has_authorizer: bool = True) -> Program:
        """The program, or CompileError with upstream's detail (`compilation failed: ...`,
        `must evaluate to bool but got int`)."""
        program = compile_in(self._env(has_authorizer), source)
        if self.composed or VARIABLES in program.tree.references:
            _undefined_variables(program, self.variable_types)
        _check_returns(program, returns)
        return program

    def add_variable(self, name: str, source: str) -> str:
        """Compile a variable and declare it for what follows; its compile error ("" when none). A variable
        that does not compile is still declared (dyn): expressions reading it fail when evaluated."""
        self.composed = True
        error = ""
        program: Program | None = None
        try:
            program = self.compile(source, ANY_RESULT)
        except CompileError as err:
            error = err.detail
        self.variables.append(Variable(name, source, program, error))
        self.variable_types[name] = program.expression.return_type() if program is not None else T.DYN
        self._envs.clear()
        return error


@dataclass
class Variable:
    name: str
    source: str
    program: Program | None
    error: str


def _variables_read(program: Program) -> set[str]:
    prefix = VARIABLES + "."
    return {r[len(prefix) :] for r in program.tree.references if r.startswith(prefix)}


@dataclass
class Context:
    """The values one evaluation sees (one request, one binding, one param) and the budget it spends.
    Variables are computed when an expression first reads them."""

    values: dict[str, Any]
    variables: list[Variable] = field(default_factory=list)
    budget: int = RUNTIME_CEL_COST_BUDGET
    _sizes: dict[str, Any] = field(default_factory=dict)
    _computed: dict[str, Any] = field(default_factory=dict)
    _failed: dict[str, str] = field(default_factory=dict)

    def _size_of(self, name: str, value: Any) -> Any:
        size = self._sizes.get(name)
        if size is None:
            size = self._sizes[name] = checked.ValueSizes(value)
        return size

    def _charge(self, program: Program) -> None:
        sizes = {n: self._size_of(n, v) for n, v in self.values.items() if n in program.tree.references}
        for name in _variables_read(program):
            if name in self._computed:
                sizes[f"{VARIABLES}.{name}"] = self._size_of(f"{VARIABLES}.{name}", self._computed[name])
        cost = max(1, checked.estimate_cost(program.tree.root, None, variables=sizes))
        if cost > PER_CALL_LIMIT:
            raise CostLimitExceeded("operation cancelled: actual cost limit exceeded")
        if cost > self.budget:
            raise OutOfBudget(OUT_OF_BUDGET)
        self.budget -= cost

    def _compute(self, names: set[str]) -> None:
        for variable in self.variables:  # in order: a variable reads only those before it
            if variable.name not in names or variable.name in self._computed or variable.name in self._failed:
                continue
            if variable.program is None:
                self._failed[variable.name] = (
                    f'composited variable "{variable.name}" fails to compile: {variable.error}'
                )
                continue
            self._compute(_variables_read(variable.program))
            try:
                self._computed[variable.name] = self._run(variable.program)
            except EvalError as err:
                self._failed[variable.name] = str(err)

    def _run(self, program: Program) -> Any:
        self._charge(program)
        values = dict(self.values)
        if self.variables:
            values[VARIABLES] = {}
            values.update({f"{VARIABLES}.{n}": v for n, v in self._computed.items()})
        try:
            return program.evaluate(program.env.Activation(values))
        except CostLimitExceeded:
            raise
        except EvalError as err:
            m = _MISSING_VARIABLE.search(str(err))
            if m is not None and m.group(1) in self._failed:
                raise EvalError(self._failed[m.group(1)]) from None
            raise

    def evaluate(self, program: Program) -> Any:
        """The expression's value; EvalError (cel-go's text) or OutOfBudget."""
        if self.variables:
            self._compute(_variables_read(program))
        return self._run(program)


def evaluation_error(source: str, err: EvalError) -> str:
    """How upstream reports an expression that failed when evaluated."""
    return f"expression '{source}' resulted in error: {err}"
