"""CRD validation rules (`x-kubernetes-validations`): compiled once per schema, reported at CRD validation when
they do not compile, and evaluated against custom resources on create and update, with transition rules,
messageExpression, reasons, fieldPath, the runtime cost budget and v1.32's ratcheting (upstream:
apiextensions-apiserver pkg/apiserver/schema/cel validation.go and compilation.go, and the CEL part of
pkg/apis/apiextensions/validation/validation.go).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...api import errors as e
from ...api.errors import FieldError
from ...cel import checked
from ...cel.environment import SELF, CompileError, CostLimitExceeded, Decl, EvalError, Program, compile_expression
from ...cel.environment import schema_decl as _schema_decl
from ...cel.schemacheck import result_type, undefined_fields
from ...cel.values import ValueModel
from ..gofmt import GoValue, _rule
from . import cel_cost
from .cel_shortcut import all_certainly_true, shortcut_sites
from .ratcheting import Correlation
from .structural import FieldPathError, child, index, key, render_field_path, valid_field_path

ROOT_FIELD = "<nil>"  # how upstream prints the nil field path of a rule on the resource's root
_MAX_MESSAGE_BYTES = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes
_NEWLINE = re.compile(r"\n+")
_OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"
_RESOURCE_META = ("apiVersion", "kind")


def _with_type_and_object_meta(s: dict[str, Any]) -> dict[str, Any]:
    """The declared type of a resource root: its properties plus apiVersion, kind and metadata."""
    props = dict(s.get("properties") or {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}},
    }
    return {**s, "properties": props}


@dataclass
class _Rule:
    spec: dict[str, Any]
    index: int
    program: Program | None = None
    error: str = ""  # the compile error's detail
    message_program: Program | None = None
    message_error: str = ""
    field_path: str = ""  # normalized
    cost: int = 0  # the static estimate of one evaluation
    message_cost: int = 0

    @property
    def text(self) -> str:
        v = self.spec.get("rule")
        return v if isinstance(v, str) else ""

    @property
    def message(self) -> str:
        v = self.spec.get("message")
        return v if isinstance(v, str) else ""

    @property
    def optional_old_self(self) -> bool:
        return self.spec.get("optionalOldSelf") is True

    @property
    def uses_old_self(self) -> bool:
        return self.program is not None and self.program.uses_old_self

    def error_string(self) -> str:
        return self.message.strip() if self.message else self.text.strip()

    def message_or_default(self) -> str:
        return self.message.strip() if self.message else f"failed rule: {self.text.strip()}"


@dataclass
class _Node:
    """One schema node with rules at or below it (the attributes ratcheting's Correlation reads included)."""

    schema: dict[str, Any]
    path: str  # the schema path below the root, for compile errors
    uncorrelatable: str | None  # the schema path where oldSelf stops being usable, if it does above here
    cardinality: int | None  # how often the node can appear, None when unbounded
    resource_root: bool = False
    rules: list[_Rule] = field(default_factory=list)
    props: dict[str, _Node] = field(default_factory=dict)
    additional: _Node | None = None
    items: _Node | None = None
    all_of: list[_Node] = field(default_factory=list)
    model: ValueModel | None = None
    # The fields of `self` that the rules and their messageExpressions read, when they read it only through
    # fields (None: they read it whole): the rules are evaluated on an object of just those fields, as the
    # runtime converts the whole value it is given.
    self_fields: frozenset[str] | None = None

    @property
    def type_str(self) -> str:
        t = self.schema.get("type")
        return t if isinstance(t, str) else ""

    @property
    def list_type(self) -> str:
        t = self.schema.get("x-kubernetes-list-type")
        return t if isinstance(t, str) else ""

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        keys = self.schema.get("x-kubernetes-list-map-keys")
        return tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()


class _SchemaView:
    """A schema node as ratcheting's Correlation reads it (properties, additionalProperties, items, list type),
    built as the comparison walks down."""

    __slots__ = ("_additional", "_items", "_props", "schema")

    def __init__(self, schema: Any) -> None:
        self.schema = schema if isinstance(schema, dict) else {}
        self._props: dict[str, _SchemaView] | None = None
        self._additional: _SchemaView | bool | None = False
        self._items: _SchemaView | bool | None = False

    @property
    def props(self) -> dict[str, _SchemaView]:
        if self._props is None:
            props = self.schema.get("properties")
            self._props = {k: _SchemaView(v) for k, v in props.items()} if isinstance(props, dict) else {}
        return self._props

    @property
    def additional(self) -> _SchemaView | None:
        if self._additional is False:
            sub = self.schema.get("additionalProperties")
            self._additional = _SchemaView(sub) if isinstance(sub, dict) else None
        return self._additional  # type: ignore[return-value]

    @property
    def items(self) -> _SchemaView | None:
        if self._items is False:
            sub = self.schema.get("items")
            self._items = _SchemaView(sub) if isinstance(sub, dict) else None
        return self._items  # type: ignore[return-value]

    type_str = _Node.type_str
    list_type = _Node.list_type
    list_map_keys = _Node.list_map_keys


def _has_rules(s: Any) -> bool:
    if not isinstance(s, dict):
        return False
    if s.get("x-kubernetes-validations"):
        return True
    props = s.get("properties")
    if isinstance(props, dict) and any(_has_rules(p) for p in props.values()):
        return True
    return _has_rules(s.get("items")) or _has_rules(s.get("additionalProperties"))


def _bounded(cardinality: int | None, limit: Any) -> int | None:
    return cardinality * max(0, limit) if cardinality is not None and isinstance(limit, int) else None


class RuleValidator:
    """Every x-kubernetes-validations rule of one openAPIV3Schema, compiled once and reused for every object."""

    def __init__(self, schema: dict[str, Any], *, resource_root: bool = True) -> None:
        self.schema = schema
        self.root = self._build(schema, schema, "", None, 1, resource_root) if _has_rules(schema) else None
        self._sites = shortcut_sites(self.root) if self.root is not None else None

    @property
    def has_rules(self) -> bool:
        return self.root is not None

    # -- compiling -----------------------------------------------------------------------------------------------

    def _build(self, vs: Any, ns: Any, path: str, uncorrelatable: str | None, cardinality: int | None,
               root: bool) -> _Node | None:  # fmt: skip
        """The node for validation schema `vs` over node schema `ns` (they differ only under allOf)."""
        if not isinstance(vs, dict) or not isinstance(ns, dict) or (not _has_rules(vs) and not vs.get("allOf")):
            return None
        node = _Node(ns, path, uncorrelatable, cardinality, root or ns.get("x-kubernetes-embedded-resource") is True)
        _compile_rules(node, vs.get("x-kubernetes-validations"))
        props_vs, props_ns = vs.get("properties"), ns.get("properties")
        if isinstance(props_vs, dict) and isinstance(props_ns, dict):
            for name, sub in props_vs.items():
                built = self._build(sub, props_ns.get(name), key(child(path, "properties"), name), uncorrelatable,
                                    cardinality, False)  # fmt: skip
                if built is not None:
                    node.props[name] = built
        items_vs, items_ns = vs.get("items"), ns.get("items")
        if isinstance(items_vs, dict) and isinstance(items_ns, dict):
            forbid = uncorrelatable if uncorrelatable is not None or ns.get("x-kubernetes-list-type") == "map" else path
            node.items = self._build(items_vs, items_ns, child(path, "items"), forbid,
                                     _bounded(cardinality, ns.get("maxItems")), False)  # fmt: skip
        add_vs, add_ns = vs.get("additionalProperties"), ns.get("additionalProperties")
        if isinstance(add_vs, dict) and isinstance(add_ns, dict):
            node.additional = self._build(add_vs, add_ns, child(path, "additionalProperties"), uncorrelatable,
                                          _bounded(cardinality, ns.get("maxProperties")), False)  # fmt: skip
        for i, sub in enumerate(vs.get("allOf") or ()):
            built = self._build(sub, ns, index(child(path, "allOf"), i), uncorrelatable, cardinality, root)
            if built is not None:
                node.all_of.append(built)
        if not (node.rules or node.props or node.items or node.additional or node.all_of):
            return None
        return node

    def compile_errors(self, path: str) -> list[FieldError]:
        """The rules' compile and cost errors, for CRD validation; `path` is the schema's own field path
        (`spec.versions[0].schema.openAPIV3Schema`)."""
        errs: list[FieldError] = []
        total: list[tuple[int, str]] = []
        if self.root is not None:
            self._node_errors(self.root, path, errs, total)
        if sum(c for c, _ in total) > cel_cost.STATIC_CRD_LIMIT:
            for _, where in sorted(total, reverse=True)[:4]:
                errs.append(e.forbidden(where, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))  # fmt: skip
            errs.append(e.forbidden(path, cel_cost.cost_error_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                sum(c for c, _ in total), cel_cost.STATIC_CRD_LIMIT)))  # fmt: skip
        return errs

    def _node_errors(self, node: _Node, base: str, errs: list[FieldError], total: list[tuple[int, str]]) -> None:
        # Upstream's walk: additionalProperties, properties, allOf, items, then the node's own rules.
        if node.additional is not None:
            self._node_errors(node.additional, base, errs, total)
        for sub in (*node.props.values(), *node.all_of):
            self._node_errors(sub, base, errs, total)
        if node.items is not None:
            self._node_errors(node.items, base, errs, total)
        node_path = f"{base}.{node.path}" if node.path else base
        uncorrelatable = f"{base}.{node.uncorrelatable}" if node.uncorrelatable else base
        errs.extend(node_rule_errors(node, node_path, uncorrelatable if node.uncorrelatable is not None else None,
                                     total))  # fmt: skip

    # -- validating ----------------------------------------------------------------------------------------------

    def validate(self, obj: Any, old: Any = None, *, ratchet: bool = True) -> list[FieldError]:
        """The rule failures of custom resource `obj` (`old` is the stored object on update, None on create);
        on update, failures of rules without oldSelf at values equal to their old values are dropped."""
        if self.root is None:
            return []
        if old is None and self._sites is not None and all_certainly_true(self._sites, obj):
            return []
        state = _State(cel_cost.RUNTIME_BUDGET)
        corr = _NOT_RATCHETED
        if ratchet and old is not None:
            corr = _Ratchet(Correlation(old, obj, _SchemaView(self.schema)), None)  # type: ignore[arg-type]
        _validate(self.root, "", obj, old, old is not None, corr, state)
        return state.errs


def _compile_rules(node: _Node, rules: Any) -> None:
    if not isinstance(rules, list) or not rules:
        return
    ns = node.schema
    node.model = ValueModel(ns, resource_root=node.resource_root)
    decl_schema = _with_type_and_object_meta(ns) if node.resource_root else ns
    decl = _schema_decl(decl_schema)
    sizes = cel_cost.size_info(decl_schema)
    node.rules = [_compile(spec, i, decl, decl_schema, sizes) for i, spec in enumerate(rules) if isinstance(spec, dict)]
    read: set[str] = set()
    for rule in node.rules:
        for program in (rule.program, rule.message_program):
            fields = checked.selected_fields(program.tree.root, SELF) if program is not None else frozenset()
            if fields is None:
                return
            read |= fields
    node.self_fields = frozenset(read)


def _checked(source: str, decl: Decl, decl_schema: dict[str, Any], optional: bool, want: str) -> Program:
    """Compile one expression and check it against the schema; CompileError with upstream's detail."""
    program = compile_expression(source, decl, optional_old_self=optional)
    undefined = undefined_fields(program, decl_schema)
    if undefined:
        raise CompileError("compilation failed: " + "\n".join(undefined))
    if result_type(program, decl_schema) not in (want, "dyn"):
        raise CompileError("cel expression must evaluate to a bool" if want == "bool" else "must evaluate to a string")
    return program


def _compile(spec: dict[str, Any], i: int, decl: Decl, decl_schema: dict[str, Any], sizes: Any) -> _Rule:
    rule = _Rule(spec, i)
    if not rule.text.strip():
        return rule
    optional = rule.optional_old_self
    try:
        rule.program = _checked(rule.text, decl, decl_schema, optional, "bool")
    except CompileError as err:
        rule.error = err.detail
        return rule
    rule.cost = rule.program.estimate_cost(sizes)
    source = spec.get("messageExpression")
    if isinstance(source, str) and source:
        try:
            rule.message_program = _checked(source, decl, decl_schema, optional, "string")
            rule.message_cost = rule.message_program.estimate_cost(sizes)
        except CompileError as err:
            rule.message_error = "messageExpression " + err.detail
    path = spec.get("fieldPath")
    if isinstance(path, str) and path:
        try:
            steps, _ = valid_field_path(path, decl_schema)
            rule.field_path = render_field_path(steps)
        except FieldPathError:
            pass
    return rule


def node_rule_errors(node: _Node, path: str, uncorrelatable: str | None,
                     total: list[tuple[int, str]] | None = None) -> list[FieldError]:  # fmt: skip
    """The compile errors of one node's rules, at `path` (upstream's order: cost, compile, messageExpression,
    oldSelf placement)."""
    errs: list[FieldError] = []
    cardinality = node.cardinality if node.cardinality is not None else cel_cost.unbounded_cardinality(node.schema)
    for rule in node.rules:
        rule_path = child(index(child(path, "x-kubernetes-validations"), rule.index), "rule")
        message_path = child(index(child(path, "x-kubernetes-validations"), rule.index), "messageExpression")
        cost = rule.cost * cardinality if rule.cost else 0
        if cost > cel_cost.STATIC_RULE_LIMIT:
            errs.append(e.forbidden(rule_path, cel_cost.cost_error_message("estimated rule cost", cost, cel_cost.STATIC_RULE_LIMIT)))  # fmt: skip
        if total is not None:
            total.append((cost, rule_path))
        if rule.error:
            errs.append(e.invalid(rule_path, GoValue(_rule(rule.spec)), rule.error))
        if rule.message_error:
            errs.append(e.invalid(message_path, GoValue(_rule(rule.spec)), rule.message_error))
        elif rule.message_program is not None:
            message_cost = rule.message_cost * cardinality
            if message_cost > cel_cost.STATIC_RULE_LIMIT:
                errs.append(e.forbidden(message_path, cel_cost.cost_error_message("estimated messageExpression cost", message_cost, cel_cost.STATIC_RULE_LIMIT)))  # fmt: skip
            if total is not None:
                total.append((message_cost, message_path))
        if rule.uses_old_self:
            if uncorrelatable is not None:
                errs.append(e.invalid(rule_path, rule.text, f"oldSelf cannot be used on the uncorrelatable portion of the schema within {uncorrelatable}"))  # fmt: skip
        elif rule.spec.get("optionalOldSelf") is not None and rule.program is not None:
            errs.append(e.invalid(child(index(child(path, "x-kubernetes-validations"), rule.index), "optionalOldSelf"),
                                  rule.spec["optionalOldSelf"], "may not be set if oldSelf is not used in rule"))  # fmt: skip
    return errs


def rules_checker(schema: dict[str, Any], path: str, uncorrelatable: str | None) -> list[FieldError]:
    """The compile errors of the rules on one schema node, in the shape keywords.RulesChecker wants. A node seen
    alone has no ancestors to multiply its cost by (cardinality 1) and no CRD total: `RuleValidator.compile_errors`
    over the whole schema has both."""
    # The resource's root is told by its path (upstream's compile adds apiVersion, kind and metadata there).
    root = path.endswith("openAPIV3Schema") or schema.get("x-kubernetes-embedded-resource") is True
    node = _Node(schema, "", uncorrelatable, 1, root)
    _compile_rules(node, schema.get("x-kubernetes-validations"))
    return node_rule_errors(node, path, uncorrelatable)


# -- evaluation ---------------------------------------------------------------------------------------------------


class _State:
    """One object's evaluation: the cost budget left, the failures, whether evaluation stopped."""

    __slots__ = ("budget", "errs", "stopped")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.errs: list[FieldError] = []
        self.stopped = False


@dataclass(frozen=True)
class _Ratchet:
    """Upstream's ratchetingOptions: the correlation here, and the nearest correlatable ancestor's."""

    current: Correlation | None
    parent: Correlation | None

    def key(self, name: str) -> _Ratchet:
        if self.current is None:
            return self
        if self.parent is None and name in _RESOURCE_META:
            return _Ratchet(None, None)  # apiVersion and kind are never ratcheted
        return _Ratchet(self.current.key(name), self.current)

    def index(self, i: int) -> _Ratchet:
        return self if self.current is None else _Ratchet(self.current.index(i), self.current)

    def unchanged(self) -> bool:
        corr = self.current if self.current is not None else self.parent
        return corr is not None and corr.unchanged()


_NOT_RATCHETED = _Ratchet(None, None)


def _at(path: str) -> str:
    return path or ROOT_FIELD


def _validate(node: _Node, path: str, v: Any, old: Any, has_old: bool, corr: _Ratchet, st: _State) -> None:
    if v is None or st.stopped:
        return
    if old is None:
        has_old = False
    if node.rules:
        _rules(node, path, v, old, has_old, corr, st)
    for sub in node.all_of:
        if st.stopped:
            return
        _validate(
            sub, path, v, old, has_old, _Ratchet(None, corr.parent) if corr.parent is not None else _NOT_RATCHETED, st
        )
    if type(v) is dict:
        old_map = old if has_old and type(old) is dict else {}
        if node.additional is not None:
            for k, x in v.items():
                if st.stopped:
                    return
                _validate(node.additional, key(path, k), x, old_map.get(k), k in old_map, corr.key(k), st)
        props = node.props
        if len(props) == 1:  # (a resource's rules on its spec): one look-up rather than a walk of the object
            [(k, sub)] = props.items()
            if k in v and not st.stopped:
                _validate(sub, child(path, k), v[k], old_map.get(k), k in old_map, corr.key(k), st)
        elif props:
            for k, x in v.items():
                sub = props.get(k)
                if sub is not None and not st.stopped:
                    _validate(sub, child(path, k), x, old_map.get(k), k in old_map, corr.key(k), st)
    elif type(v) is list and node.items is not None:
        olds = _old_items(node, old if has_old else None)
        for i, x in enumerate(v):
            if st.stopped:
                return
            prior = olds.get(_item_key(node, x)) if olds else None
            _validate(node.items, index(path, i), x, prior, prior is not None, corr.index(i), st)


def _item_key(node: _Node, item: Any) -> Any:
    if type(item) is not dict:
        return None
    return tuple((type(item.get(k)).__name__, item.get(k)) for k in node.list_map_keys)


def _old_items(node: _Node, old: Any) -> dict[Any, Any]:
    """Old items by list-map key: only map lists correlate their items with the old list's."""
    if node.list_type != "map" or type(old) is not list or not node.list_map_keys:
        return {}
    out: dict[Any, Any] = {}
    for item in old:
        k = _item_key(node, item)
        if k is not None:
            out.setdefault(k, item)
    return out


def _rules(node: _Node, path: str, v: Any, old: Any, has_old: bool, corr: _Ratchet, st: _State) -> None:
    if st.budget <= 0:
        st.errs.append(e.invalid(_at(path), node.type_str, _OUT_OF_BUDGET))
        st.stopped = True
        return
    model = node.model
    assert model is not None
    plain: Any = _UNSET
    canon: Any = _UNSET
    fields = node.self_fields
    for rule in node.rules:
        if rule.error:
            st.errs.append(e.invalid(_at(path), node.type_str, f"rule compile error: {rule.error}"))
            continue
        program = rule.program
        if program is None:
            continue
        uses_old = program.uses_old_self
        if uses_old and not has_old and not rule.optional_old_self:
            continue
        if uses_old:  # transition rules see set and map lists in a canonical order, so == ignores their order
            if canon is _UNSET:
                canon = (model.convert(v, True), model.convert(old, True) if has_old else None)
            self_v, old_v = canon
        else:
            if plain is _UNSET:
                plain = model.convert(v)
            self_v, old_v = plain, None
        charge = _charge(rule.cost, rule.program, self_v)
        if charge > cel_cost.PER_CALL_LIMIT:
            st.errs.append(e.invalid(_at(path), node.type_str, f"'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule.error_string()}"))  # fmt: skip
            st.stopped = True
            return
        if charge > st.budget:
            st.errs.append(e.invalid(_at(path), node.type_str, _OUT_OF_BUDGET))
            st.stopped = True
            return
        st.budget -= charge
        seen = self_v
        if fields is not None and type(self_v) is dict:
            seen = {k: self_v[k] for k in fields if k in self_v}
        if not uses_old and program.shortcut is not None and program.shortcut(seen):
            continue  # certainly true: the runtime would say so too
        activation = program.activation(seen, old_v, has_old and uses_old)
        try:
            result = program.evaluate(activation)
        except CostLimitExceeded as err:
            st.errs.append(e.invalid(_at(path), node.type_str, f"'{err}': no further validation rules will be run due to call cost exceeds limit for rule: {rule.error_string()}"))  # fmt: skip
            st.stopped = True
            return
        except EvalError as err:
            text = str(err)
            if text.startswith("no such overload"):
                detail = f"'{text}': call arguments did not match a supported operator, function or macro signature for rule: {rule.error_string()}"  # fmt: skip
            else:
                detail = f"{text} evaluating rule: {rule.error_string()}"
            st.errs.append(e.invalid(_at(path), node.type_str, detail))
            continue
        if result is True:
            continue
        where = child(path, rule.field_path) if rule.field_path else path
        message = rule.message_or_default()
        if rule.message_program is not None:
            evaluated = _message(rule, activation, self_v, st)
            if st.stopped:
                _add(st, rule, corr, e.invalid(_at(where), node.type_str, evaluated))
                return
            message = evaluated or message
        _add(st, rule, corr, _field_error(_at(where), node.type_str, message, rule.spec.get("reason")))


_UNSET = object()


def _charge(cost: int, program: Program | None, value: Any) -> int:
    """What an evaluation is charged: the static estimate, or for costly rules the estimate over the actual
    value's sizes (the runtime counts no cost itself)."""
    if cost <= 1000 or program is None:
        return max(cost, 1)
    return max(1, min(cost, program.estimate_cost(checked.ValueSizes(value))))


def _message(rule: _Rule, activation: Any, self_v: Any, st: _State) -> str:
    """The messageExpression's message, or "" to fall back to the rule's message."""
    program = rule.message_program
    assert program is not None
    charge = _charge(rule.message_cost, program, self_v)
    if charge > st.budget:
        st.stopped = True
        return "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"  # fmt: skip
    st.budget -= charge
    try:
        value = program.evaluate(activation)
    except CostLimitExceeded:
        st.stopped = True
        return f"no further validation rules will be run due to call cost exceeds limit for messageExpression: {e.go_quote(program.source)}"  # fmt: skip
    except EvalError:
        return ""
    if not isinstance(value, str):
        return ""
    trimmed = value.strip()
    if len(trimmed.encode()) > _MAX_MESSAGE_BYTES or _NEWLINE.search(trimmed) or not trimmed:
        return ""
    return trimmed


def _add(st: _State, rule: _Rule, corr: _Ratchet, err: FieldError) -> None:
    if not rule.uses_old_self and corr.unchanged():
        return  # ratcheted: upstream turns it into a warning
    st.errs.append(err)


def _field_error(path: str, type_str: str, detail: str, reason: Any) -> FieldError:
    if reason == "FieldValueForbidden":
        return e.forbidden(path, detail)
    if reason == "FieldValueRequired":
        return e.required(path, detail)
    if reason == "FieldValueDuplicate":
        return e.duplicate(path, type_str)
    return e.invalid(path, type_str, detail)


@functools.lru_cache(maxsize=256)
def _rule_validator(text: bytes) -> RuleValidator:
    return RuleValidator(orjson.loads(text))


def rule_validator_for(schema: dict[str, Any]) -> RuleValidator:
    """The RuleValidator of a schema, shared by every CRD object that has the same one (compiling its rules
    takes milliseconds; the CRD's validation and the handler serving it ask for it in turn)."""
    return _rule_validator(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
