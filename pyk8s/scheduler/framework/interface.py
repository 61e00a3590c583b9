"""The framework's contracts (upstream: pkg/scheduler/framework/interface.go): status codes, cycle state,
cluster events and one base class per extension point.

A plugin is an object with a `name` that subclasses the extension points it implements. Plugin methods
return `None` for success, as upstream's plugins return a nil `*Status`, and a `Status` otherwise.

Filter and Score plugins may also implement the vectorized forms `filter_vector` / `score_vector` over the
snapshot's columns; the per-node methods stay the readable specification and the property tests prove both
agree. The framework calls the per-node form for nodes a vector rejects, to get the reasons.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    import numpy as np

    from .snapshot import Snapshot
    from .types import NodeInfo, PodInfo, QueuedPodInfo

Pod = dict[str, Any]
Node = dict[str, Any]

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


class Code(enum.IntEnum):
    """Upstream's status codes, in upstream's order; `str(code)` is upstream's name."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    def __str__(self) -> str:
        return CODE_NAMES[self]


CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class Status:
    """The result of running a plugin: a code, reasons (shown to users), the plugin that failed, an error."""

    __slots__ = ("code", "error", "plugin", "reasons")

    def __init__(
        self, code: Code = Code.SUCCESS, *reasons: str, plugin: str = "", error: BaseException | None = None
    ) -> None:
        self.code = code
        self.reasons: list[str] = list(reasons)
        self.plugin = plugin
        self.error = error
        if error is not None and not self.reasons:
            self.reasons = [str(error)]

    @classmethod
    def as_error(cls, error: BaseException | str, plugin: str = "") -> Status:
        return cls(Code.ERROR, plugin=plugin, error=error if isinstance(error, BaseException) else Exception(error))

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending: the pod cannot go here (not an error)."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = plugin
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self.code == other.code and self.reasons == other.reasons

    def __hash__(self) -> int:
        return hash((self.code, tuple(self.reasons)))

    def __repr__(self) -> str:
        return f"Status({self.code!s}, {self.reasons!r}, plugin={self.plugin!r})"


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def is_success(status: Status | None) -> bool:
    return status is None or status.code == Code.SUCCESS


class CycleState:
    """Data plugins share within one scheduling cycle (upstream: CycleState), keyed by string."""

    __slots__ = ("_data", "record_plugin_metrics", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.record_plugin_metrics = False

    def read(self, key: str) -> Any:
        """The value under `key`; KeyError when a PreFilter/PreScore did not write it."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        """A copy whose values are cloned when they have `clone()` (used by preemption's what-ifs)."""
        c = CycleState()
        c._data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self._data.items()}
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.record_plugin_metrics = self.record_plugin_metrics
        return c


@dataclass
class PreFilterResult:
    """A PreFilter's narrowing of the nodes to try; `node_names` None means all nodes."""

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


@dataclass
class PostFilterResult:
    nominated_node_name: str = ""
    mode: str = "ModeOverride"  # upstream's NominatingMode: ModeNoop or ModeOverride


@dataclass
class NodeScore:
    name: str
    score: int


# -- cluster events (what may make an unschedulable pod schedulable) ---------------------------------------


class ActionType(enum.IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATIONS = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    UPDATE_OTHER = 4096  # any other update of the resource (upstream: the catch-all within Update)
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION | UPDATE_POD_LABEL | UPDATE_POD_SCALE_DOWN | UPDATE_POD_TOLERATIONS
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED | UPDATE_POD_GENERATED_RESOURCE_CLAIM | UPDATE_OTHER
    )  # fmt: skip
    ALL = ADD | DELETE | UPDATE


# Resources events are about (upstream: EventResource); "*" is every resource.
POD, ASSIGNED_POD, UNSCHEDULED_POD, NODE = "Pod", "AssignedPod", "UnscheduledPod", "Node"
PVC, PV, STORAGE_CLASS, CSI_NODE, CSI_DRIVER, CSI_STORAGE_CAPACITY = (
    "PersistentVolumeClaim", "PersistentVolume", "storage.k8s.io/StorageClass", "storage.k8s.io/CSINode",
    "storage.k8s.io/CSIDriver", "storage.k8s.io/CSIStorageCapacity",
)  # fmt: skip
NAMESPACE, WILDCARD = "Namespace", "*"


@dataclass(frozen=True)
class ClusterEvent:
    resource: str
    action: ActionType
    label: str = ""  # for logs and metrics; when not given, upstream's Label(): resource then action name

    def __post_init__(self) -> None:
        if not self.label:
            name = _RESOURCE_LABELS.get(self.resource, self.resource) + _ACTION_NAMES.get(self.action, "")
            object.__setattr__(self, "label", name)

    def matches(self, other: ClusterEvent) -> bool:
        """Whether this registered interest covers the event `other` that happened."""
        if self.resource == WILDCARD and self.action & ActionType.ALL == ActionType.ALL:
            return True
        resource_ok = self.resource in (WILDCARD, other.resource) or (
            self.resource == POD and other.resource in (ASSIGNED_POD, UNSCHEDULED_POD)
        )
        return resource_ok and bool(self.action & other.action)


# Upstream's ActionType.String(); a combination of several update kinds has no name there either.
_ACTION_NAMES = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATIONS: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.UPDATE_OTHER: "Update",
    ActionType.UPDATE: "Update",
    ActionType.ALL: "All",
}
_RESOURCE_LABELS = {UNSCHEDULED_POD: "UnschedulablePod"}  # upstream's internal name for this resource


class QueueingHint(enum.IntEnum):
    SKIP = 0
    QUEUE = 1


QueueingHintFn = Callable[["Pod", Any, Any], QueueingHint]  # (pod, old object, new object) -> hint


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None  # None: always queue


# -- the handle plugins get --------------------------------------------------------------------------------


class Lister(Protocol):
    """Read access to cluster objects other than nodes and pods (namespaces, PVCs, PVs, PDBs, …)."""

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]: ...


class Handle(Protocol):
    """What the framework gives a plugin (upstream: framework.Handle)."""

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def objects(self) -> Lister: ...

    @property
    def feature_gates(self) -> dict[str, bool]: ...

    @property
    def client(self) -> Any: ...  # the RESTClient, or None when evaluating offline

    @property
    def parallelism(self) -> int: ...


# -- extension points -----------------------------------------------------------------------------------------


class Plugin:
    name: ClassVar[str] = ""
    # True when the plugin's Filter and raw Score on a node depend only on the pod and that node's NodeInfo (and
    # on PreFilter/PreScore state computed from the pod alone): pods of one equivalence class then share them.
    node_local: ClassVar[bool] = False
    # True when, further, they read only the Node object, not the pods on the node: a node whose pods changed
    # keeps its verdict and score for the class (TaintToleration, NodeAffinity, NodeName, NodeUnschedulable).
    node_object_only: ClassVar[bool] = False


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: Pod) -> Status | None:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise NotImplementedError


class EnqueueExtensions(Plugin):
    def events_to_register(self) -> list[ClusterEventWithHint]:
        raise NotImplementedError


class PreFilterExtensions:
    """Incremental updates of a PreFilter's state when preemption adds or removes pods on a node."""

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        raise NotImplementedError

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        raise NotImplementedError

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None


class FilterPlugin(Plugin):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        raise NotImplementedError

    # Optional: `filter_vector(state, pod, snapshot) -> np.ndarray[bool]` over snapshot.node_info_list,
    # True where `filter` would succeed. Detected with hasattr by the framework.


class PostFilterPlugin(Plugin):
    async def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        raise NotImplementedError


class ScoreExtensions:
    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        raise NotImplementedError


class ScorePlugin(Plugin):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        raise NotImplementedError

    def score_extensions(self) -> ScoreExtensions | None:
        return None

    # Optional: `score_vector(state, pod, snapshot, idx: np.ndarray[int]) -> np.ndarray[int64]`, the raw
    # (pre-normalisation) scores of the nodes at positions `idx` of snapshot.node_info_list.


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """A status and, with Wait, how long to wait (seconds)."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError


class BindPlugin(Plugin):
    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        raise NotImplementedError


EXTENSION_POINTS: dict[str, type[Plugin]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}

# A plugin factory: (args from pluginConfig, already defaulted, or None; the handle) -> plugin.
PluginFactory = Callable[[dict[str, Any] | None, Handle], Plugin]


@dataclass
class Diagnosis:
    """Why a pod fits nowhere (upstream: framework.Diagnosis)."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, st: Status) -> None:
        """Name the plugin behind a rejection (upstream: AddPluginStatus): every rejecting plugin, a Pending one
        included, is unschedulable; a Pending one is pending as well."""
        if not st.plugin:
            return
        if st.is_rejected():
            self.unschedulable_plugins.add(st.plugin)
        if st.code == Code.PENDING:
            self.pending_plugins.add(st.plugin)


class FitError(Exception):
    """No node fits the pod; the message is upstream's summary ("0/5 nodes are available: …")."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        self._histogram: tuple[int, list[str]] | None = None
        super().__init__(self.message())

    def message(self) -> str:
        # "0/N nodes are available: <PreFilter or Filter reasons>. <PostFilter message>", as upstream's
        # FitError.Error(): the PostFilter part gets no period of its own, since preemption's message is a FitError
        # message ending in one already (v1.30 dropped the second; kubernetes#123301).
        text = f"0/{self.num_all_nodes} nodes are available:"
        d = self.diagnosis
        if d.pre_filter_msg:
            text += f" {d.pre_filter_msg}."
        else:
            histogram = self._reasons()
            if histogram:
                text += f" {', '.join(histogram)}."
        if d.post_filter_msg:
            text += f" {d.post_filter_msg}"
        return text

    def _reasons(self) -> list[str]:
        # The message is read several times per failed cycle; counting thousands of nodes' reasons once will do
        # (statuses are only ever added to a diagnosis, so its size tells whether it changed).
        size = len(self.diagnosis.node_to_status)
        if self._histogram is None or self._histogram[0] != size:
            self._histogram = (size, sorted_reasons(self.diagnosis.node_to_status.values()))
        return self._histogram[1]


def sorted_reasons(statuses: Iterable[Status]) -> list[str]:
    """ "N reason" strings counted over nodes, sorted as upstream's sortReasonsHistogram (by text)."""
    counts = Counter(chain.from_iterable(map(attrgetter("reasons"), statuses)))
    return sorted(f"{n} {r}" for r, n in counts.items())


def ndarray_type() -> type[np.ndarray]:  # pragma: no cover - typing helper
    import numpy as np

    return np.ndarray
