"""The feature gates that change what kube-scheduler v1.32 decides (upstream: pkg/features' versioned specs as
of v1.32, read by the scheduler through plugins/feature.Features and utilfeature.DefaultFeatureGate), which of
them pyk8s implements, and how `--feature-gates` is read and checked.

Upstream's binary knows every Kubernetes gate. A name outside this table does not change what a v1.32 scheduler
decides, so it is accepted and reported as ignored. A gate pyk8s does not implement may only be given its
default: any other value would be accepted and then change nothing, so it is refused with a message saying so.
GA gates are locked to their default, as upstream locks them (with upstream's message).

Upstream reads the process's gates, not a profile's, in two places the scheduler shares between profiles: the
NodeInfo accounting of each pod's requests (framework.calculateResource) and the queue's reading of a pod update
(extractPodScaleDown). `process_gates()` holds those values here; the Scheduler sets them from its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

ALPHA, BETA, GA = "ALPHA", "BETA", "GA"


@dataclass(frozen=True, slots=True)
class Gate:
    """A gate as v1.32 defines it, and what pyk8s does with it (`unimplemented` says why a value other than the
    default is refused; empty when pyk8s implements the gate)."""

    default: bool
    stage: str
    locked: bool = False
    unimplemented: str = ""


GATES: dict[str, Gate] = {
    # read by the scheduler in v1.32, implemented here
    "SchedulerQueueingHints": Gate(True, BETA),
    "SidecarContainers": Gate(True, BETA),
    "MatchLabelKeysInPodTopologySpread": Gate(True, BETA),
    "NodeInclusionPolicyInPodTopologySpread": Gate(True, BETA),
    "VolumeAttributesClass": Gate(False, BETA),
    "CSIMigrationPortworx": Gate(True, BETA),
    "VolumeCapacityPriority": Gate(False, ALPHA),
    "InPlacePodVerticalScaling": Gate(False, ALPHA),
    "PodLevelResources": Gate(False, ALPHA),
    "PodSchedulingReadiness": Gate(True, GA, locked=True),
    "PodDisruptionConditions": Gate(True, GA, locked=True),
    # the API server's in v1.32 (it folds matchLabelKeys into the affinity terms' selectors at creation: here
    # pyk8s/apiserver/registry/pod_affinity.py, always on); the scheduler reads the stored selector only
    "MatchLabelKeysInPodAffinity": Gate(True, BETA),
    # read by the scheduler in v1.32, not implemented here
    "DynamicResourceAllocation": Gate(
        False, BETA, unimplemented="pyk8s's scheduler has no DynamicResources plugin (resource claims)"
    ),
    "DRAAdminAccess": Gate(False, ALPHA, unimplemented="it belongs to DynamicResources, which pyk8s does not have"),
    "SchedulerAsyncPreemption": Gate(
        False, ALPHA, unimplemented="pyk8s's preemption evicts the victims before its scheduling cycle ends"
    ),
}

DEFAULT_FEATURE_GATES: dict[str, bool] = {name: g.default for name, g in GATES.items()}

# Upstream's special names: every alpha (beta) gate at once; an explicit setting of a gate wins over them.
ALL_ALPHA, ALL_BETA = "AllAlpha", "AllBeta"


class FeatureGateError(ValueError):
    """A --feature-gates value the scheduler refuses (the message says why)."""


_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def parse_feature_gates(text: str) -> dict[str, bool]:
    """`Name=bool,Name=bool` as upstream's flag reads it (strconv.ParseBool's spellings), without checking names."""
    gates: dict[str, bool] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        if value not in _TRUE + _FALSE:
            detail = f'strconv.ParseBool: parsing "{value}": invalid syntax'
            raise FeatureGateError(f"invalid value of {name}={value}, err: {detail}")
        gates[name] = value in _TRUE
    return gates


def resolve_feature_gates(requested: Mapping[str, bool]) -> tuple[dict[str, bool], list[str]]:
    """The gates to run with (every known gate, set or defaulted) and the names given that pyk8s's scheduler
    does not know (ignored, as they change nothing a v1.32 scheduler decides). Raises FeatureGateError for a
    locked gate set away from its default or an unimplemented gate set to anything but its default."""
    out = dict(DEFAULT_FEATURE_GATES)
    for special, stage in ((ALL_ALPHA, ALPHA), (ALL_BETA, BETA)):
        if special in requested:
            for name, g in GATES.items():
                if g.stage == stage:
                    out[name] = requested[special]
    ignored = []
    for name, value in requested.items():
        if name in (ALL_ALPHA, ALL_BETA):
            continue
        if name not in GATES:
            ignored.append(name)
            continue
        out[name] = value
    for name, value in out.items():
        g = GATES[name]
        if value == g.default:
            continue
        if g.locked:
            raise FeatureGateError(
                f"cannot set feature gate {name} to {str(value).lower()}, feature is locked to {str(g.default).lower()}"
            )
        if g.unimplemented:
            raise FeatureGateError(f"feature gate {name}={str(value).lower()} is not implemented: {g.unimplemented}")
    return out, ignored


# -- the process's gates ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcessGates:
    """The gates upstream reads process-wide in what profiles share."""

    in_place_pod_vertical_scaling: bool = False
    pod_level_resources: bool = False

    @classmethod
    def from_gates(cls, gates: Mapping[str, bool]) -> ProcessGates:
        return cls(
            in_place_pod_vertical_scaling=bool(gates.get("InPlacePodVerticalScaling", False)),
            pod_level_resources=bool(gates.get("PodLevelResources", False)),
        )


_process = ProcessGates()


def process_gates() -> ProcessGates:
    return _process


def set_process_gates(gates: Mapping[str, bool]) -> None:
    """Make these the process's gates (the Scheduler does, at construction)."""
    global _process
    _process = ProcessGates.from_gates(gates)


@contextmanager
def process_gates_set(gates: Mapping[str, bool]) -> Iterator[None]:
    """The process's gates set to these for the duration (offline evaluation, tests), then restored."""
    global _process
    saved = _process
    _process = ProcessGates.from_gates(gates)
    try:
        yield
    finally:
        _process = saved
