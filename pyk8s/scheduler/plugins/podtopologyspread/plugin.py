"""The PodTopologySpread plugin (upstream: podtopologyspread/plugin.go): construction from
PodTopologySpreadArgs (with upstream's validation messages), which constraints a pod gets (its own, or the
default ones with a selector deduced from the workloads selecting it), and the cluster events, with queueing
hints, that may make a pod it rejected schedulable.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from ....api import errors
from ....api.validation import is_qualified_name
from ...framework.interface import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    Pod,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueingHint,
    ScoreExtensions,
    ScorePlugin,
)
from .common import (
    DO_NOT_SCHEDULE,
    HONOR,
    NAME,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    Features,
    default_selector,
    filter_constraints,
    node_has_all_keys,
    node_labels,
    pod_labels,
    pod_labels_match_constraints,
    pod_namespace,
)
from .filtering import FilteringMixin
from .scoring import ScoringMixin
from .vectors import NodeMasks, PodCounts

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


def validate_args(defaulting_type: str, constraints: list[dict[str, Any]]) -> None:
    """Upstream's ValidatePodTopologySpreadArgs: raise ValueError with its aggregated field errors."""
    errs: list[errors.FieldError] = []
    if defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errs.append(errors.not_supported("defaultingType", defaulting_type, [SYSTEM_DEFAULTING, LIST_DEFAULTING]))
    elif defaulting_type == SYSTEM_DEFAULTING and constraints:
        errs.append(errors.invalid("defaultingType", defaulting_type, "when .defaultConstraints are not empty"))
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        p = f"defaultConstraints[{i}]"
        max_skew = c.get("maxSkew", 0)
        if max_skew <= 0:
            errs.append(errors.invalid(f"{p}.maxSkew", max_skew, "not in valid range (0, inf)"))
        key = c.get("topologyKey", "")
        if not key:
            errs.append(errors.required(f"{p}.topologyKey", "can not be empty"))
        else:
            errs.extend(errors.invalid(f"{p}.topologyKey", key, msg) for msg in is_qualified_name(key))
        action = c.get("whenUnsatisfiable", "")
        if not action:
            errs.append(errors.required(f"{p}.whenUnsatisfiable", "can not be empty"))
        elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            errs.append(errors.not_supported(f"{p}.whenUnsatisfiable", action, [DO_NOT_SCHEDULE, SCHEDULE_ANYWAY]))
        if c.get("labelSelector") is not None:
            errs.append(
                errors.forbidden(
                    f"{p}.labelSelector", "constraint must not define a selector, as they deduced for each pod"
                )
            )
        if (key, action) in seen:
            errs.append(errors.duplicate(p, f"{{{key}, {action}}}"))
        seen.add((key, action))
    if errs:
        msgs = list(dict.fromkeys(str(e) for e in errs))
        raise ValueError(msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]")


class PodTopologySpread(
    FilteringMixin,
    ScoringMixin,
    PreFilterPlugin,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    EnqueueExtensions,
    PreFilterExtensions,
    ScoreExtensions,
):
    """Spreads pods across topology domains: hard constraints filter, soft ones score."""

    name: ClassVar[str] = NAME

    def __init__(
        self, handle: Handle, default_constraints: list[dict[str, Any]], system_defaulted: bool, features: Features
    ) -> None:
        self.handle = handle
        self.default_constraints = default_constraints
        self.system_defaulted = system_defaulted
        self.features = features
        # The columnar paths; tests turn this off to check the per-node paths give the same states.
        self.vectorize = True
        self.masks = NodeMasks()
        self.pod_counts = PodCounts()
        # Default constraints without matchLabelKeys parse the same for every pod: parsed once per action.
        self._label_free = not any(c.get("matchLabelKeys") for c in default_constraints)
        self._parsed_defaults: dict[str, list[Constraint]] = {}

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> PodTopologySpread:
        args = args or {}
        defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING  # the v1 default
        constraints = list(args.get("defaultConstraints") or [])
        validate_args(defaulting, constraints)
        system = defaulting == SYSTEM_DEFAULTING
        if system:
            constraints = SYSTEM_DEFAULT_CONSTRAINTS
        return cls(handle, constraints, system, Features.from_gates(dict(handle.feature_gates)))

    # -- which constraints apply --------------------------------------------------------------------------------

    def build_default_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The default constraints for `action`, all with the selector of the workloads selecting the pod;
        none when nothing selects it."""
        constraints = self._parsed_defaults.get(action) if self._label_free else None
        if constraints is None:
            constraints = filter_constraints(self.default_constraints, pod_labels(pod), action, self.features)
            if self._label_free:
                self._parsed_defaults[action] = constraints
        if not constraints:
            return []
        selector = default_selector(pod, self.handle)
        if selector.empty:
            return []
        return [replace(c, selector=selector) for c in constraints]

    def _constraints(self, pod: Pod, action: str, kind: str) -> list[Constraint]:
        own = (pod.get("spec") or {}).get("topologySpreadConstraints") or []
        if own:
            try:
                return filter_constraints(own, pod_labels(pod), action, self.features)
            except ValueError as err:
                raise ValueError(f"obtaining pod's {kind} topology spread constraints: {err}") from err
        try:
            return self.build_default_constraints(pod, action)
        except ValueError as err:
            raise ValueError(f"setting default {kind} topology spread constraints: {err}") from err

    def get_constraints(self, pod: Pod) -> list[Constraint]:
        """The pod's hard (DoNotSchedule) constraints, its own or the defaults. Raises ValueError."""
        return self._constraints(pod, DO_NOT_SCHEDULE, "hard")

    def get_soft_constraints(self, pod: Pod) -> list[Constraint]:
        """The pod's soft (ScheduleAnyway) constraints, its own or the defaults. Raises ValueError."""
        return self._constraints(pod, SCHEDULE_ANYWAY, "soft")

    # -- EnqueueExtensions ------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        if self.features.queueing_hints:
            # With hints, a pod's own new toleration can help under nodeTaintsPolicy: Honor.
            pod_actions |= ActionType.UPDATE_POD_TOLERATIONS
        node_actions = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        return [
            ClusterEventWithHint(ClusterEvent(POD, pod_actions), self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions), self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when an assigned pod in the pod's namespace that its selectors match comes, goes, or changes
        labels in a way that flips a match; or when the pod itself gets new tolerations under Honor."""
        if (new is not None and not _involved(new, pod)) or (old is not None and not _involved(old, pod)):
            return QueueingHint.SKIP
        try:
            constraints = self.get_constraints(pod)
        except ValueError:
            return QueueingHint.QUEUE
        if new is not None and old is not None:
            if (
                _uid(new) == _uid(pod)
                and _tolerations(new) != _tolerations(old)
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            old_labels, new_labels = pod_labels(old), pod_labels(new)
            if old_labels == new_labels:
                return QueueingHint.SKIP
            for c in constraints:
                if c.selector.matches(old_labels) != c.selector.matches(new_labels):
                    return QueueingHint.QUEUE
            return QueueingHint.SKIP
        changed = new if new is not None else old
        if changed is not None and pod_labels_match_constraints(constraints, pod_labels(changed)):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when a node carrying all topology keys appears or disappears, gains or loses one of them,
        changes a topology value, or (still carrying them) changes taints."""
        try:
            constraints = self.get_constraints(pod)
        except ValueError:
            return QueueingHint.QUEUE
        old_match = old is not None and node_has_all_keys(node_labels(old), constraints)
        new_match = new is not None and node_has_all_keys(node_labels(new), constraints)
        if old is not None and new is not None:
            if old_match != new_match:
                return QueueingHint.QUEUE
            if new_match:
                old_labels, new_labels = node_labels(old), node_labels(new)
                if any(old_labels.get(c.topology_key, "") != new_labels.get(c.topology_key, "") for c in constraints):
                    return QueueingHint.QUEUE
                if ((old.get("spec") or {}).get("taints") or []) != ((new.get("spec") or {}).get("taints") or []):
                    return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new is not None:
            return QueueingHint.QUEUE if new_match else QueueingHint.SKIP
        return QueueingHint.QUEUE if old_match else QueueingHint.SKIP


def _uid(pod: Pod) -> str:
    return (pod.get("metadata") or {}).get("uid", "")


def _tolerations(pod: Pod) -> list[dict[str, Any]]:
    # Semantic equality: a missing list equals an empty one.
    return (pod.get("spec") or {}).get("tolerations") or []


def _involved(other: Pod, pod: Pod) -> bool:
    """Whether `other` can affect `pod`'s spreading: it is the pod itself, or is assigned and shares its
    namespace (upstream: involvedInTopologySpreading)."""
    return _uid(other) == _uid(pod) or (
        bool((other.get("spec") or {}).get("nodeName")) and pod_namespace(other) == pod_namespace(pod)
    )
