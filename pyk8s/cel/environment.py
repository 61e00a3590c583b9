"""The Kubernetes CEL environment: rules compiled with `self` (and `oldSelf`) declared from an OpenAPI schema,
evaluated against JSON values, with upstream's error texts (upstream: apiserver pkg/cel/environment base.go,
pkg/cel/common schemas.go for the schema-to-type mapping, apiextensions-apiserver pkg/apiserver/schema/cel
compilation.go for what compiling a rule means).

Objects with properties are declared `map(string, dyn)`: the runtime has no object types outside protobuf, so
a misspelt field is found when evaluated (`no such key`) rather than when compiled (`undefined field`).
Integers and numbers are declared `int` and `double`; a rule comparing the two (which upstream's
CrossTypeNumericComparisons allows) is compiled again with the numbers declared `dyn`.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from . import checked, library
from .fastpath import compile_shortcut
from .kubetypes import POOL

T = cel.Type
SELF, OLD_SELF = "self", "oldSelf"
_OPTIONAL_OLD = "__oldSelfOptional"  # the list (empty or one value) that an optional oldSelf is bound from

# A mixed-number comparison the checker refuses without cross-type numeric comparisons.
_MIXED_NUMERIC = re.compile(r"found no matching overload for '_(?:<|<=|>|>=|==|!=)_' applied to "
                            r"'\((?:int|uint|double|dyn), (?:int|uint|double|dyn)\)'")  # fmt: skip
_LOCATION = re.compile(r"^ERROR: <input>:(\d+):(\d+):", re.MULTILINE)
_STATUS = re.compile(r"^[A-Z_]+: ")


class CompileError(Exception):
    """A rule that does not compile; `detail` is upstream's text (`compilation failed: ERROR: <input>:...`)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class EvalError(Exception):
    """An evaluation error, with cel-go's wording where the runtime's differs (`no such key: x`)."""


class CostLimitExceeded(EvalError):
    """The evaluation went past the per-call budget (the runtime's iteration budget stands in for it)."""


# -- declared types -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decl:
    """A CEL type to declare, as a hashable description: `kind` is a primitive name, `list`, `map` or `dyn`."""

    kind: str
    elem: Decl | None = None

    def signature(self) -> str:
        if self.kind == "list":
            return f"list({self.elem.signature() if self.elem else 'dyn'})"
        if self.kind == "map":
            return f"map(string, {self.elem.signature() if self.elem else 'dyn'})"
        return self.kind

    def loosened(self) -> Decl:
        """The same type with every int and double declared dyn."""
        if self.kind in ("int", "double"):
            return DYN
        if self.elem is not None:
            return Decl(self.kind, self.elem.loosened())
        return self

    def cel_type(self) -> Any:
        if self.kind == "list":
            return T.List(self.elem.cel_type() if self.elem else T.DYN)
        if self.kind == "map":
            return T.Map(T.STRING, self.elem.cel_type() if self.elem else T.DYN)
        return _PRIMITIVES[self.kind]


_PRIMITIVES = {"dyn": T.DYN, "int": T.INT, "double": T.DOUBLE, "string": T.STRING, "bool": T.BOOL,
               "bytes": T.BYTES, "duration": T.DURATION, "timestamp": T.TIMESTAMP}  # fmt: skip
DYN = Decl("dyn")
OBJECT = Decl("map", DYN)
_STRING_FORMATS = {"byte": "bytes", "duration": "duration", "date": "timestamp", "date-time": "timestamp"}


def schema_decl(s: Any) -> Decl:
    """The declared CEL type of values of schema `s` (upstream: common.SchemaDeclType)."""
    if not isinstance(s, dict) or s.get("x-kubernetes-int-or-string") is True:
        return DYN
    t = s.get("type")
    if t == "object":
        additional = s.get("additionalProperties")
        if isinstance(additional, dict) and not s.get("properties") and not s.get("x-kubernetes-embedded-resource"):
            return Decl("map", schema_decl(additional))
        return OBJECT
    if t == "array":
        items = s.get("items")
        return Decl("list", schema_decl(items)) if isinstance(items, dict) else DYN
    if t == "string":
        return Decl(_STRING_FORMATS.get(s.get("format") or "", "string"))
    if t == "boolean":
        return Decl("bool")
    if t == "number":
        return Decl("double")
    if t == "integer":
        return Decl("int")
    return DYN


# -- environments -------------------------------------------------------------------------------------------------

_lock = threading.Lock()


@functools.lru_cache(maxsize=512)
def _env(self_sig: Decl, optional_old_self: bool) -> Any:
    """An environment declaring `self` and `oldSelf` (or, for optionalOldSelf rules, the list oldSelf is bound
    from). Shared by every rule on a node of the same type."""
    extensions = library.RUNTIME_EXTENSIONS + (library.BINDINGS_EXTENSION if optional_old_self else "")
    variables = {SELF: self_sig.cel_type()}
    if optional_old_self:
        variables[_OPTIONAL_OLD] = T.List(self_sig.cel_type())
    else:
        variables[OLD_SELF] = self_sig.cel_type()
    return cel.NewEnv(
        POOL,
        config=cel.NewEnvConfigFromYaml(extensions),
        variables=variables,
        extensions=[library.kubernetes_extension()],
    )


@dataclass
class Program:
    """A compiled expression: the runtime's program, its tree, and what evaluating it needs."""

    source: str
    expression: Any
    env: Any
    tree: checked.Checked
    output: str  # the checked result type's name: bool, string, dyn, ...
    optional_old_self: bool
    prefix_length: int = 0  # the characters compiled before `source` (the optionalOldSelf binding)
    # True when the expression certainly evaluates to true with `self` bound to the value (fastpath), for the
    # rules simple enough to tell without the runtime; None for the others.
    shortcut: Callable[[Any], bool] | None = None

    @property
    def uses_old_self(self) -> bool:
        if self.optional_old_self:  # oldSelf is the binding's variable: is it read in the rule (its result)?
            body = self.tree.root.parts.get("result")
            return body is not None and OLD_SELF in checked.idents(body)
        return OLD_SELF in self.tree.references

    def estimate_cost(self, self_sizes: Any) -> int:
        """An upper bound of one evaluation's cost with `self` as big as `self_sizes` says."""
        return checked.estimate_cost(self.tree.root, self_sizes, _OPTIONAL_OLD if self.optional_old_self else "")

    def activation(self, self_value: Any, old_value: Any = None, has_old: bool = False) -> Any:
        if self.optional_old_self:
            return self.env.Activation({SELF: self_value, _OPTIONAL_OLD: [old_value] if has_old else []})
        if has_old:
            return self.env.Activation({SELF: self_value, OLD_SELF: old_value})
        return self.env.Activation({SELF: self_value})

    def evaluate(self, activation: Any) -> Any:
        """The result as a Python value, or EvalError / CostLimitExceeded."""
        try:
            result = self.expression.eval(activation)
        except RuntimeError as err:
            text = str(err)
            if "budget exceeded" in text:
                raise CostLimitExceeded("operation cancelled: actual cost limit exceeded") from None
            raise EvalError(_runtime_message(text)) from None
        if result.type() == T.ERROR:
            raise EvalError(_runtime_message(str(result.value())))
        return result.plain_value()


def _runtime_message(text: str) -> str:
    """The runtime's error text in cel-go's words, for the messages users know."""
    text = _STATUS.sub("", text.split(" [", 1)[0] if text.endswith("]") else text)
    if text.startswith("Key not found in map"):
        key = text.partition(":")[2].strip().strip('"')
        return f"no such key: {key}"
    if text.startswith("No matching overloads found") or text.startswith("no such overload"):
        return "no such overload"
    if text.startswith("Index error"):
        m = re.search(r"index=(-?\d+)", text)
        return f"index out of bounds: {m.group(1) if m else ''}"
    if text == "divide by zero":
        return "division by zero"
    if text.startswith("No such field") or text.startswith("Applying SELECT to non-message type"):
        return "no such key"
    return text


def _compile_text(env: Any, text: str) -> tuple[Any | None, str]:
    with _lock:  # the runtime builds its compiler lazily, once per environment
        try:
            return env.compile(text), ""
        except RuntimeError as err:
            return None, str(err)


def _clean(message: str, line_shift: int) -> str:
    message = _STATUS.sub("", message, count=1)
    if message.endswith("]"):
        message = message[: message.rfind(" [")]
    if line_shift:
        message = _LOCATION.sub(lambda m: f"ERROR: <input>:{int(m.group(1)) - line_shift}:{m.group(2)}:", message)
    return message


def compile_in(env: Any, source: str) -> Program:
    """Compile `source` in an environment the caller declared (admission policies'); CompileError on failure."""
    expression, error = _compile_text(env, source)
    if expression is None:
        raise CompileError("compilation failed: " + _clean(error, 0))
    tree = checked.decode(expression.serialize())
    return Program(source, expression, env, tree, expression.return_type().name().lower(), False)


def compile_expression(source: str, self_decl: Decl, *, optional_old_self: bool = False) -> Program:
    """Compile one expression with `self` (and `oldSelf`) declared `self_decl`; CompileError on failure.

    With `optional_old_self`, `oldSelf` is an optional: the rule is compiled inside a binding of that name, on
    its own line so that error locations (one line down) can be put back."""
    text, shift, prefix = source, 0, ""
    if optional_old_self:
        prefix = (
            f"cel.bind({OLD_SELF}, {_OPTIONAL_OLD}.size() == 0 ? optional.none() : optional.of({_OPTIONAL_OLD}[0]),\n"
        )
        text, shift = f"{prefix}{source}\n)", 1
    env = _env(self_decl, optional_old_self)
    expression, error = _compile_text(env, text)
    if expression is None and _MIXED_NUMERIC.search(error):
        loose = self_decl.loosened()
        if loose != self_decl:
            env = _env(loose, optional_old_self)
            expression, _ = _compile_text(env, text)
    if expression is None:
        raise CompileError("compilation failed: " + _clean(error, shift))
    tree = checked.decode(expression.serialize())
    output = expression.return_type().name().lower()
    shortcut = None if optional_old_self else compile_shortcut(tree.root, SELF)
    return Program(source, expression, env, tree, output, optional_old_self, len(prefix), shortcut)
