"""The cluster as one scheduling cycle sees it (upstream: internal/cache.Snapshot), plus its columnar form.

`node_info_list` is every node in a fixed order; `columns` holds one numpy array per resource over that order,
which vectorized Filter/Score plugins read. The scheduler cache refreshes only the positions of nodes that
changed since the last cycle. `node_derived(key, fn)` memoises anything computed from node objects alone
(label masks, taint masks) until a node object changes — pods coming and going do not invalidate it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .image_states import image_states_for
from .interface import Node, Pod
from .types import NodeInfo

_INT = np.int64


class Columns:
    """Per-node resource vectors in `node_info_list` order (cpu in millicores)."""

    __slots__ = (
        "_scalar",
        "alloc_cpu",
        "alloc_eph",
        "alloc_mem",
        "alloc_pods",
        "generation",
        "num_pods",
        "nz_cpu",
        "nz_mem",
        "req_cpu",
        "req_eph",
        "req_mem",
    )

    def __init__(self, n: int) -> None:
        def column() -> np.ndarray:
            return np.zeros(n, dtype=_INT)

        self.alloc_cpu, self.alloc_mem, self.alloc_eph, self.alloc_pods = column(), column(), column(), column()
        self.req_cpu, self.req_mem, self.req_eph, self.num_pods = column(), column(), column(), column()
        self.nz_cpu, self.nz_mem, self.generation = column(), column(), column()
        self._scalar: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def set_row(self, i: int, ni: NodeInfo) -> None:
        a, r, nz = ni.allocatable, ni.requested, ni.non_zero_requested
        self.generation[i] = ni.generation  # lets per-node caches find the rows that changed without a scan
        self.alloc_cpu[i] = a.milli_cpu
        self.alloc_mem[i] = a.memory
        self.alloc_eph[i] = a.ephemeral_storage
        self.alloc_pods[i] = a.allowed_pod_number
        self.req_cpu[i] = r.milli_cpu
        self.req_mem[i] = r.memory
        self.req_eph[i] = r.ephemeral_storage
        self.num_pods[i] = len(ni.pods)
        self.nz_cpu[i] = nz.milli_cpu
        self.nz_mem[i] = nz.memory
        for name, (alloc, req) in self._scalar.items():
            alloc[i] = a.scalar.get(name, 0)
            req[i] = r.scalar.get(name, 0)

    def scalar(self, name: str, nodes: list[NodeInfo]) -> tuple[np.ndarray, np.ndarray]:
        """(allocatable, requested) of an extended/hugepages/attachable resource, built on first use."""
        got = self._scalar.get(name)
        if got is None:
            alloc = np.fromiter((ni.allocatable.scalar.get(name, 0) for ni in nodes), dtype=_INT, count=len(nodes))
            req = np.fromiter((ni.requested.scalar.get(name, 0) for ni in nodes), dtype=_INT, count=len(nodes))
            got = self._scalar[name] = (alloc, req)
        return got


_snapshot_generation = itertools.count(1)


class Snapshot:
    """An immutable-per-cycle view of nodes and their pods."""

    def __init__(self, node_infos: Iterable[NodeInfo] = ()) -> None:
        self.node_info_list: list[NodeInfo] = []
        # By position: whether the node hosts pods with (anti-)affinity terms / required anti-affinity terms.
        self._with_affinity = np.zeros(0, dtype=bool)
        self._with_required_anti = np.zeros(0, dtype=bool)
        self._num_with_affinity = self._num_with_required_anti = 0  # how many are set: asked every cycle
        self.positions: dict[str, int] = {}
        self.columns = Columns(0)
        self.generation = 0  # the cache generation this snapshot reflects
        self.node_generation = next(_snapshot_generation)
        self._derived: dict[Any, Any] = {}
        # Positions replaced since the node list was last rebuilt, in order: equivalence caches replay them.
        self.epoch = 0
        self._changes: list[int] = []
        self._changes_base = 0  # the sequence number of _changes[0]
        self.set_nodes(list(node_infos))

    @classmethod
    def from_objects(cls, nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> Snapshot:
        """A snapshot of these nodes with these pods placed by spec.nodeName (pods on unknown nodes dropped)."""
        nodes = list(nodes)
        infos = {n["metadata"]["name"]: NodeInfo(n) for n in nodes}
        for name, states in image_states_for(nodes).items():
            infos[name].image_states = states
        for p in pods:
            ni = infos.get((p.get("spec") or {}).get("nodeName") or "")
            if ni is not None:
                ni.add_pod(p)
        return cls(infos.values())

    # -- maintenance (the scheduler cache calls these) --------------------------------------------------------

    def set_nodes(self, node_infos: list[NodeInfo]) -> None:
        """Replace the whole node list (nodes were added or removed): rebuild positions and columns."""
        self.node_info_list = node_infos
        self.epoch = next(_snapshot_generation)
        self._changes_base += len(self._changes)
        self._changes = []
        self.positions = {ni.name: i for i, ni in enumerate(node_infos)}
        self.columns = Columns(len(node_infos))
        for i, ni in enumerate(node_infos):
            self.columns.set_row(i, ni)
        self._with_affinity = np.fromiter((bool(ni.pods_with_affinity) for ni in node_infos), dtype=bool,
                                          count=len(node_infos))  # fmt: skip
        self._with_required_anti = np.fromiter(
            (bool(ni.pods_with_required_anti_affinity) for ni in node_infos), dtype=bool, count=len(node_infos)
        )
        self._num_with_affinity = int(self._with_affinity.sum())
        self._num_with_required_anti = int(self._with_required_anti.sum())
        self.nodes_changed()

    def replace(self, ni: NodeInfo, node_changed: bool) -> None:
        """Put a fresh NodeInfo at its node's position; `node_changed` when the Node object itself changed."""
        i = self.positions[ni.name]
        self.node_info_list[i] = ni
        self.columns.set_row(i, ni)
        self._changes.append(i)
        if len(self._changes) > 4 * len(self.node_info_list) + 64:  # keep the log bounded
            drop = len(self._changes) // 2
            self._changes_base += drop
            del self._changes[:drop]
        with_affinity, with_anti = bool(ni.pods_with_affinity), bool(ni.pods_with_required_anti_affinity)
        self._num_with_affinity += with_affinity - bool(self._with_affinity[i])
        self._num_with_required_anti += with_anti - bool(self._with_required_anti[i])
        self._with_affinity[i] = with_affinity
        self._with_required_anti[i] = with_anti
        if node_changed:
            self.nodes_changed()

    @property
    def have_pods_with_affinity_list(self) -> list[NodeInfo]:
        """Nodes hosting pods with affinity or anti-affinity terms, in node order (upstream's list)."""
        return [self.node_info_list[i] for i in np.flatnonzero(self._with_affinity).tolist()]

    @property
    def have_pods_with_required_anti_affinity_list(self) -> list[NodeInfo]:
        """Nodes hosting pods with required anti-affinity terms, in node order (upstream's list)."""
        return [self.node_info_list[i] for i in np.flatnonzero(self._with_required_anti).tolist()]

    def any_pods_with_affinity(self) -> bool:
        return self._num_with_affinity > 0

    def any_pods_with_required_anti_affinity(self) -> bool:
        return self._num_with_required_anti > 0

    def nodes_changed(self) -> None:
        self.node_generation = next(_snapshot_generation)
        self._derived.clear()

    # -- reading ----------------------------------------------------------------------------------------------

    @property
    def change_seq(self) -> int:
        """A cursor into the change log: pass it to `changed_since` later."""
        return self._changes_base + len(self._changes)

    def changed_since(self, epoch: int, seq: int) -> set[int] | None:
        """Positions whose NodeInfo was replaced since (`epoch`, `seq`), or None when the node list was rebuilt
        or the log no longer reaches back that far (then everything must be recomputed)."""
        if epoch != self.epoch or seq < self._changes_base:
            return None
        return set(self._changes[seq - self._changes_base :])

    def get(self, name: str) -> NodeInfo | None:
        i = self.positions.get(name)
        return None if i is None else self.node_info_list[i]

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def node_derived(self, key: Any, compute: Callable[[], Any]) -> Any:
        """`compute()` memoised until a node object changes (pods changing do not invalidate it)."""
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = compute()
            return value

    def pods(self) -> Iterable[Pod]:
        for ni in self.node_info_list:
            for pi in ni.pods:
                yield pi.pod
