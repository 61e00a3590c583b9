"""The NodeAffinity PreFilter/Filter/Score plugin (upstream: plugins/nodeaffinity/node_affinity.go, with the
selector parsing of component-helpers/scheduling/corev1/nodeaffinity).

Filter requires spec.nodeSelector and the required node affinity (and the profile's `addedAffinity`); PreFilter
narrows the nodes when every required term names nodes by `metadata.name In`; Score sums the weights of the
matching preferred terms (the pod's and `addedAffinity`'s), normalised so the best node gets 100.

Terms are parsed once into immutable `Term`s that carry their parse errors as upstream does: a term with an
error never matches (required) or fails PreScore (preferred). The vectorized forms evaluate each requirement
over per-label-key columns of value codes, memoised in the snapshot until a Node object changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import orjson

from ...api.errors import FieldError, invalid, not_supported
from ...api.validation import is_label_value, is_qualified_name
from ..framework.interface import (
    MAX_NODE_SCORE,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    NodeScore,
    Pod,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScoreExtensions,
    ScorePlugin,
    Status,
)
from .normalize import default_normalize_score, default_normalize_vector

if TYPE_CHECKING:
    from ..framework.snapshot import Snapshot
    from ..framework.types import NodeInfo

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
PRE_FILTER_STATE_KEY = "PreFilterNodeAffinity"
PRE_SCORE_STATE_KEY = "PreScoreNodeAffinity"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
LABEL_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPS = ("In", "NotIn")
_INT64 = re.compile(r"[+-]?[0-9]+\Z")


def parse_int64(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): an optional sign and decimal digits within int64, else None."""
    if not _INT64.match(text):
        return None
    n = int(text)
    return n if -(2**63) <= n < 2**63 else None


class _GoStrings:
    """A []string printed as Go's %#v does in field errors."""

    def __init__(self, values: list[str] | None) -> None:
        self.values = values

    def go_string(self) -> str:
        if self.values is None:
            return "[]string(nil)"
        return "[]string{" + ", ".join(orjson.dumps(v).decode() for v in self.values) + "}"


def aggregate_message(errors: list[str]) -> str:
    """Several errors as upstream's errors.Aggregate prints them: deduplicated, bracketed when more than one."""
    seen = list(dict.fromkeys(errors))
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


# -- parsed selectors -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Requirement:
    """A label requirement; `values` for In/NotIn, `bound` for Gt/Lt."""

    key: str
    op: str
    values: frozenset[str] = frozenset()
    bound: int = 0

    def matches(self, labels: dict[str, str]) -> bool:
        have = labels.get(self.key)
        op = self.op
        if op == "In":
            return have is not None and have in self.values
        if op == "NotIn":
            return have is None or have not in self.values
        if op == "Exists":
            return have is not None
        if op == "DoesNotExist":
            return have is None
        n = None if have is None else parse_int64(have)
        if n is None:
            return False
        return n > self.bound if op == "Gt" else n < self.bound


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """`key == value` (In) or `key != value` (NotIn) over the node's fields; a missing field reads as ""."""

    key: str
    equal: bool
    value: str

    def matches(self, fields: dict[str, str]) -> bool:
        return (fields.get(self.key, "") == self.value) == self.equal


@dataclass(frozen=True, slots=True)
class Term:
    """A NodeSelectorTerm: None for a part the term leaves out, `errors` when it did not parse."""

    labels: tuple[Requirement, ...] | None
    fields: tuple[FieldRequirement, ...] | None
    errors: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str], fields: dict[str, str]) -> bool:
        if self.errors:
            return False
        if self.labels is not None and not all(r.matches(labels) for r in self.labels):
            return False
        # A node without a name has no fields; then matchFields is not consulted (upstream does the same).
        return self.fields is None or not fields or all(r.matches(fields) for r in self.fields)


def _label_requirement(expr: dict[str, Any], path: str) -> tuple[Requirement | None, list[FieldError]]:
    """One matchExpressions entry, validated as labels.NewRequirement does."""
    key, op, values = expr.get("key") or "", expr.get("operator") or "", expr.get("values")
    if op not in LABEL_OPS:
        return None, [not_supported(f"{path}.operator", op, LABEL_OPS)]
    vals = list(values or ())
    errs: list[FieldError] = []
    key_msgs = is_qualified_name(key)
    if key_msgs:
        errs.append(invalid(f"{path}.key", key, "; ".join(key_msgs)))
    bound = 0
    if op in ("In", "NotIn") and not vals:
        errs.append(
            invalid(f"{path}.values", _GoStrings(values), "for 'in', 'notin' operators, values set can't be empty")
        )
    elif op in ("Exists", "DoesNotExist") and vals:
        errs.append(
            invalid(f"{path}.values", _GoStrings(values), "values set must be empty for exists and does not exist")
        )
    elif op in ("Gt", "Lt"):
        if len(vals) != 1:
            errs.append(
                invalid(f"{path}.values", _GoStrings(values), "for 'Gt', 'Lt' operators, exactly one value is required")
            )
        for i, v in enumerate(vals):
            n = parse_int64(v)
            if n is None:
                errs.append(invalid(f"{path}.values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"))
            else:
                bound = n
    for i, v in enumerate(vals):
        msgs = is_label_value(v)
        if msgs:
            errs.append(invalid(f"{path}.values[{i}][{v}]", v, "; ".join(msgs)))
    return (None if errs else Requirement(key, op, frozenset(vals), bound)), errs


def _field_requirement(expr: dict[str, Any], path: str) -> tuple[FieldRequirement | None, list[FieldError]]:
    op, values = expr.get("operator") or "", expr.get("values")
    if op not in FIELD_OPS:
        return None, [not_supported(f"{path}.operator", op, FIELD_OPS)]
    if not values or len(values) != 1:
        return None, [invalid(f"{path}.values", _GoStrings(values), "must have one element")]
    return FieldRequirement(expr.get("key") or "", op == "In", values[0]), []


def parse_term(term: dict[str, Any], path: str) -> Term:
    """A NodeSelectorTerm with its errors (upstream: newNodeSelectorTerm); `path` prefixes error fields."""
    errors: list[FieldError] = []
    labels = fields = None
    if term.get("matchExpressions"):
        parsed = [
            _label_requirement(e, f"{path}.matchExpressions[{i}]") for i, e in enumerate(term["matchExpressions"])
        ]
        labels = tuple(r for r, _ in parsed if r is not None)
        errors.extend(e for _, errs in parsed for e in errs)
    if term.get("matchFields"):
        parsed_f = [_field_requirement(e, f"{path}.matchFields[{i}]") for i, e in enumerate(term["matchFields"])]
        fields = tuple(r for r, _ in parsed_f if r is not None)
        errors.extend(e for _, errs in parsed_f for e in errs)
    return Term(labels, fields, tuple(str(e) for e in errors))


def _empty_term(term: dict[str, Any]) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def _join(root: str, child: str) -> str:
    return f"{root}.{child}" if root else child


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """A NodeSelector's terms, ORed; empty terms are dropped since they select nothing."""

    terms: tuple[Term, ...]

    @classmethod
    def parse(cls, selector: dict[str, Any], root: str = "") -> NodeSelector:
        path = _join(root, "nodeSelectorTerms")
        terms = selector.get("nodeSelectorTerms") or []
        return cls(tuple(parse_term(t, f"{path}[{i}]") for i, t in enumerate(terms) if not _empty_term(t)))

    def errors(self) -> list[str]:
        return [e for t in self.terms for e in t.errors]

    def match(self, labels: dict[str, str], fields: dict[str, str]) -> tuple[bool, list[str]]:
        """Whether a term matches; the parse errors only when none does (upstream: LazyErrorNodeSelector)."""
        errors: list[str] = []
        for t in self.terms:
            if t.errors:
                errors.extend(t.errors)
            elif t.matches(labels, fields):
                return True, []
        return False, errors


@dataclass(frozen=True, slots=True)
class PreferredTerms:
    """Weighted preferred terms; weight-0 and empty terms are dropped, as upstream."""

    terms: tuple[tuple[int, Term], ...]

    @classmethod
    def parse(cls, terms: list[dict[str, Any]], root: str = "") -> tuple[PreferredTerms, list[str]]:
        parsed: list[tuple[int, Term]] = []
        errors: list[str] = []
        for i, t in enumerate(terms):
            weight, pref = int(t.get("weight") or 0), t.get("preference") or {}
            if weight == 0 or _empty_term(pref):
                continue
            term = parse_term(pref, f"{root}[{i}]")
            if term.errors:
                errors.extend(term.errors)
            else:
                parsed.append((weight, term))
        return cls(tuple(parsed)), errors

    def score(self, labels: dict[str, str], fields: dict[str, str]) -> int:
        return sum(w for w, t in self.terms if t.matches(labels, fields))


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """spec.nodeSelector (ANDed equalities) and the required node affinity (upstream: GetRequiredNodeAffinity)."""

    selector: tuple[tuple[str, str], ...] | None
    affinity: NodeSelector | None

    @classmethod
    def of(cls, pod: Pod) -> RequiredNodeAffinity:
        spec = pod.get("spec") or {}
        node_selector = spec.get("nodeSelector") or {}
        required = _node_affinity(pod).get(REQUIRED)
        return cls(
            tuple(sorted(node_selector.items())) if node_selector else None,
            NodeSelector.parse(required) if required is not None else None,
        )

    def match(self, node: dict[str, Any]) -> tuple[bool, list[str]]:
        labels, fields = node_labels_fields(node)
        if self.selector is not None and any(labels.get(k) != v for k, v in self.selector):
            return False, []
        if self.affinity is not None:
            return self.affinity.match(labels, fields)
        return True, []


def node_labels_fields(node: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    md = node.get("metadata") or {}
    name = md.get("name") or ""
    return md.get("labels") or {}, ({"metadata.name": name} if name else {})


def _node_affinity(pod: Pod) -> dict[str, Any]:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


# -- vectorized evaluation ----------------------------------------------------------------------------------------


class _LabelColumn:
    """One label key over the snapshot's nodes: a value code per node (-1: no such label), the codes of each
    value, and the values parsed as int64 for Gt/Lt."""

    __slots__ = ("codes", "index", "int_ok", "ints")

    def __init__(self, snapshot: Snapshot, key: str) -> None:
        self.index: dict[str, int] = {}
        nodes = snapshot.node_info_list
        self.codes = np.full(len(nodes), -1, dtype=np.int64)
        for i, ni in enumerate(nodes):
            v = (((ni.node or {}).get("metadata") or {}).get("labels") or {}).get(key)
            if v is not None:
                self.codes[i] = self.index.setdefault(v, len(self.index))
        parsed = [parse_int64(v) for v in self.index]
        table_ok = np.array([p is not None for p in parsed] + [False], dtype=bool)
        table = np.array([p or 0 for p in parsed] + [0], dtype=np.int64)
        self.int_ok, self.ints = table_ok[self.codes], table[self.codes]  # code -1 reads the sentinel

    def equal_any(self, values: frozenset[str] | tuple[str, ...]) -> np.ndarray:
        codes = [self.index[v] for v in values if v in self.index]
        if not codes:
            return np.zeros(len(self.codes), dtype=bool)
        return np.isin(self.codes, codes)


def _column(snapshot: Snapshot, key: str) -> _LabelColumn:
    return snapshot.node_derived(("NodeAffinity", "label", key), lambda: _LabelColumn(snapshot, key))


def _named(snapshot: Snapshot) -> np.ndarray:
    def compute() -> np.ndarray:
        nodes = snapshot.node_info_list
        return np.fromiter((bool(ni.node is not None and ni.name) for ni in nodes), dtype=bool, count=len(nodes))

    return snapshot.node_derived(("NodeAffinity", "named"), compute)


def _requirement_mask(snapshot: Snapshot, r: Requirement) -> np.ndarray:
    col = _column(snapshot, r.key)
    if r.op == "In":
        return col.equal_any(r.values)
    if r.op == "NotIn":
        return ~col.equal_any(r.values)
    if r.op == "Exists":
        return col.codes >= 0
    if r.op == "DoesNotExist":
        return col.codes < 0
    return col.int_ok & ((col.ints > r.bound) if r.op == "Gt" else (col.ints < r.bound))


def _field_mask(snapshot: Snapshot, r: FieldRequirement) -> np.ndarray:
    n = len(snapshot.node_info_list)
    if r.key == "metadata.name":
        eq = np.zeros(n, dtype=bool)
        i = snapshot.positions.get(r.value) if r.value else None
        if i is not None:
            eq[i] = True
    else:
        eq = np.full(n, r.value == "", dtype=bool)  # any other field reads as ""
    return eq if r.equal else ~eq


def term_mask(snapshot: Snapshot, term: Term) -> np.ndarray:
    n = len(snapshot.node_info_list)
    if term.errors:
        return np.zeros(n, dtype=bool)
    mask = np.ones(n, dtype=bool)
    for r in term.labels or ():
        mask &= _requirement_mask(snapshot, r)
    if term.fields is not None:
        fields_ok = np.ones(n, dtype=bool)
        for f in term.fields:
            fields_ok &= _field_mask(snapshot, f)
        mask &= fields_ok | ~_named(snapshot)
    return mask


def selector_mask(snapshot: Snapshot, selector: NodeSelector) -> np.ndarray:
    mask = np.zeros(len(snapshot.node_info_list), dtype=bool)
    for t in selector.terms:
        mask |= term_mask(snapshot, t)
    return mask


def required_mask(snapshot: Snapshot, req: RequiredNodeAffinity) -> np.ndarray:
    mask = np.ones(len(snapshot.node_info_list), dtype=bool)
    for k, v in req.selector or ():
        mask &= _column(snapshot, k).equal_any((v,))
    if req.affinity is not None:
        mask &= selector_mask(snapshot, req.affinity)
    return mask


def preferred_scores(snapshot: Snapshot, terms: PreferredTerms) -> np.ndarray:
    out = np.zeros(len(snapshot.node_info_list), dtype=np.int64)
    for w, t in terms.terms:
        out += term_mask(snapshot, t) * np.int64(w)
    return out


# -- the plugin -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Parsed:
    """What the plugin needs from one pod's spec, parsed once per distinct spec."""

    required: RequiredNodeAffinity
    preferred: PreferredTerms | None
    preferred_error: str  # upstream fails PreScore when a preferred term does not parse

    def clone(self) -> _Parsed:
        return self  # immutable: preemption's what-ifs cannot change it


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions):
    name: ClassVar[str] = "NodeAffinity"
    node_local: ClassVar[bool] = True  # verdicts shared by pods of one equivalence class
    node_object_only: ClassVar[bool] = True  # pods coming and going leave its verdicts alone

    def __init__(self, args: dict[str, Any] | None = None, enable_queueing_hints: bool = True) -> None:
        self.enable_queueing_hints = enable_queueing_hints
        self.added_node_selector: NodeSelector | None = None
        self.added_pref_terms: PreferredTerms | None = None
        added = (args or {}).get("addedAffinity")
        if added:
            errors: list[str] = []
            if added.get(REQUIRED) is not None:
                self.added_node_selector = NodeSelector.parse(added[REQUIRED], f"addedAffinity.{REQUIRED}")
                errors += self.added_node_selector.errors()
            if added.get(PREFERRED):
                self.added_pref_terms, pref_errors = PreferredTerms.parse(
                    added[PREFERRED], f"addedAffinity.{PREFERRED}"
                )
                errors += pref_errors
            if errors:
                raise ValueError(aggregate_message(errors))
        self._parsed: dict[bytes, _Parsed] = {}
        # Memo keys in the snapshot name the profile's added affinity, so profiles never share verdicts.
        self._added_key = orjson.dumps(added or None, option=orjson.OPT_SORT_KEYS)

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> NodeAffinity:
        gates = getattr(handle, "feature_gates", None) or {}
        return cls(args, enable_queueing_hints=gates.get("SchedulerQueueingHints", True))

    def _spec_key(self, pod: Pod) -> bytes:
        spec = pod.get("spec") or {}
        return orjson.dumps([spec.get("nodeSelector"), _node_affinity(pod)], option=orjson.OPT_SORT_KEYS)

    def _parse(self, pod: Pod, key: bytes | None = None) -> _Parsed:
        key = self._spec_key(pod) if key is None else key
        got = self._parsed.get(key)
        if got is None:
            if len(self._parsed) > 4096:  # many distinct specs: start over rather than grow without bound
                self._parsed.clear()
            preferred: PreferredTerms | None = None
            errors: list[str] = []
            pref = _node_affinity(pod).get(PREFERRED)
            if pref is not None:
                preferred, errors = PreferredTerms.parse(pref)
            got = self._parsed[key] = _Parsed(
                RequiredNodeAffinity.of(pod), preferred, aggregate_message(errors) if errors else ""
            )
        return got

    # -- events -------------------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Only label changes matter; without hints preCheck may swallow Node/Add, so taint updates are added
        # as for every plugin registering Node/Add (kubernetes#109437).
        action = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        if not self.enable_queueing_hints:
            action |= ActionType.UPDATE_NODE_TAINT
        return [ClusterEventWithHint(ClusterEvent(NODE, action), self.is_schedulable_after_node_change)]

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Requeue for a node that now matches the pod's (and the profile's) required affinity but did not before."""
        if not isinstance(new, dict) or (old is not None and not isinstance(old, dict)):
            return QueueingHint.QUEUE
        if self.added_node_selector is not None and not self.added_node_selector.match(*node_labels_fields(new))[0]:
            return QueueingHint.SKIP
        required = self._parse(pod).required
        matched, errors = required.match(new)
        if errors:
            return QueueingHint.QUEUE
        if not matched:
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        was_matched, errors = required.match(old)
        if errors:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP if was_matched else QueueingHint.QUEUE

    # -- filter -------------------------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = _node_affinity(pod).get(REQUIRED)
        if (
            required is None
            and self.added_node_selector is None
            and (pod.get("spec") or {}).get("nodeSelector") is None
        ):
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, self._parse(pod))
        terms = (required or {}).get("nodeSelectorTerms") or []
        if not terms:
            return None, None
        # Terms are ORed, requirements ANDed: the result names nodes only if every term pins metadata.name.
        node_names: set[str] | None = None
        for t in terms:
            term_names: set[str] | None = None
            for r in t.get("matchFields") or ():
                if r.get("key") == "metadata.name" and r.get("operator") == "In":
                    s = set(r.get("values") or ())
                    term_names = s if term_names is None else term_names & s
            if term_names is None:
                return None, None
            node_names = term_names if node_names is None else node_names | term_names
        if not node_names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        return PreFilterResult(node_names), None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node or {}
        if self.added_node_selector is not None and not self.added_node_selector.match(*node_labels_fields(node))[0]:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED)
        parsed = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(parsed, _Parsed):
            parsed = self._parse(pod)  # PreFilter disabled
        if not parsed.required.match(node)[0]:  # parse errors only make terms fail, as upstream
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD)
        return None

    def filter_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> np.ndarray:
        key = self._spec_key(pod)

        def compute() -> np.ndarray:
            mask = required_mask(snapshot, self._parse(pod, key).required)
            if self.added_node_selector is not None:
                mask &= selector_mask(snapshot, self.added_node_selector)
            return mask

        return snapshot.node_derived(("NodeAffinity", "filter", self._added_key, key), compute)

    # -- score --------------------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        parsed = self._parse(pod)
        if parsed.preferred_error:
            return Status.as_error(parsed.preferred_error)
        if parsed.preferred is None and self.added_pref_terms is None:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, parsed)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        labels, fields = node_labels_fields(node_info.node or {})
        count = self.added_pref_terms.score(labels, fields) if self.added_pref_terms is not None else 0
        parsed = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(parsed, _Parsed):
            parsed = self._parse(pod)  # PreScore disabled
            if parsed.preferred_error:
                return 0, Status.as_error(parsed.preferred_error)
        if parsed.preferred is not None:
            count += parsed.preferred.score(labels, fields)
        return count, None

    def score_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        key = self._spec_key(pod)

        def compute() -> np.ndarray:
            out = np.zeros(len(snapshot.node_info_list), dtype=np.int64)
            if self.added_pref_terms is not None:
                out += preferred_scores(snapshot, self.added_pref_terms)
            preferred = self._parse(pod, key).preferred
            if preferred is not None:
                out += preferred_scores(snapshot, preferred)
            return out

        return snapshot.node_derived(("NodeAffinity", "score", self._added_key, key), compute)[idx]

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    def normalize_vector(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        return default_normalize_vector(MAX_NODE_SCORE, False, scores)
