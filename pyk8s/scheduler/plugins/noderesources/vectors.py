"""The vector form of the NodeResources scorers: upstream's per-node arithmetic (resource_allocation.go,
least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go, balanced_allocation.go) over the
snapshot's columns for many nodes at once, giving exactly the integers of the per-node form.

At a few thousand nodes numpy's cost is mostly per call, not per element, so the resources a pod is scored
on are stacked into (resources, nodes) blocks and each step is one call for all of them. Allocatable
amounts change only with Node objects, so their float64 stack is memoised with `snapshot.node_derived`.

The integer strategies divide by each node's capacity. numpy's int64 division by an array is slow, so they
divide in float64 instead where that is provably exact: every numerator is an integer below 2**52 and the
divisor D at most 2**45, so a quotient N/D that is not an integer is at least 1/D > 2**-47 away from the
next integer, far more than float64's half-ulp (2**-47 at most for quotients below 128), and the floor of
the rounded quotient is the integer quotient. Beyond 2**45 (35 TB of memory) the int64 path runs.
BalancedAllocation is float64 upstream too and needs no such care: the same operations in the same order
give the same bits (Go does not fuse multiply-adds on amd64, and neither does numpy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...framework.interface import MAX_NODE_SCORE
from ...framework.snapshot import Snapshot
from ...framework.types import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource
from .args import LEAST_ALLOCATED, MAX_UTILIZATION, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO, ResourceSpec

BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"

# Largest capacity for which dividing in float64 gives the exact integer quotient (see the module docstring).
EXACT_FLOAT_LIMIT = 1 << 45


def column(snapshot: Snapshot, name: str, use_requested: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """(allocatable, already requested) columns of a resource; None for resources upstream never scores
    (neither cpu, memory, ephemeral-storage nor a scalar resource: such a node has nothing to compare)."""
    c = snapshot.columns
    if name == CPU:
        return c.alloc_cpu, (c.req_cpu if use_requested else c.nz_cpu)
    if name == MEMORY:
        return c.alloc_mem, (c.req_mem if use_requested else c.nz_mem)
    if name == EPHEMERAL_STORAGE:
        return c.alloc_eph, c.req_eph
    if is_scalar_resource(name):
        return c.scalar(name, snapshot.node_info_list)
    return None


@dataclass(frozen=True, slots=True)
class _AllocStack:
    """Allocatable of some resources over all nodes, as float64 rows, and what the fast paths need to know."""

    af: np.ndarray  # (resources, nodes)
    all_valid: bool  # every node has every resource (no zero capacity to skip)
    exact: bool  # all capacities <= EXACT_FLOAT_LIMIT


def _alloc_stack(snapshot: Snapshot, names: tuple[str, ...], allocs: list[np.ndarray]) -> _AllocStack:
    def build() -> _AllocStack:
        a = np.stack(allocs) if allocs else np.zeros((0, len(snapshot.node_info_list)), dtype=np.int64)
        return _AllocStack(a.astype(np.float64), bool(a.all()), bool(a.size == 0 or a.max() <= EXACT_FLOAT_LIMIT))

    return snapshot.node_derived(("NodeResources/allocatable", names), build)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a scorer looks at for one set of pod requests: the resources that count, in order."""

    names: tuple[str, ...]
    weights: list[int]
    pod_requests: list[int]
    w: np.ndarray  # weights as float64
    wi: np.ndarray  # weights as int64
    equal_weights: bool
    p: np.ndarray  # pod requests as an int64 column, (resources, 1)


def plan(resources: Sequence[ResourceSpec], pod_requests: list[int]) -> Plan:
    """The resources of `resources` a pod with these requests is scored on (upstream leaves out a resource the
    node has no capacity of, and an extended resource the pod does not ask for)."""
    chosen = [
        (r, pr)
        for r, pr in zip(resources, pod_requests, strict=True)
        if not (pr == 0 and is_scalar_resource(r.name))
        and (r.name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource(r.name))
    ]
    return Plan(
        names=tuple(r.name for r, _ in chosen),
        weights=[r.weight for r, _ in chosen],
        pod_requests=[pr for _, pr in chosen],
        w=np.asarray([r.weight for r, _ in chosen], dtype=np.float64),
        wi=np.asarray([r.weight for r, _ in chosen], dtype=np.int64),
        equal_weights=len({r.weight for r, _ in chosen}) <= 1,
        p=np.asarray([pr for _, pr in chosen], dtype=np.int64)[:, None],
    )


def score_vector(
    strategy: str,
    pl: Plan,
    use_requested: bool,
    rtcr_table: np.ndarray | None,
    snapshot: Snapshot,
    idx: np.ndarray,
) -> np.ndarray:
    """Raw scores of the nodes at positions `idx` for a pod planned as `pl`."""
    m = len(idx)
    n_res = len(pl.names)
    if not n_res:
        # nothing to score on: no weights for the integer strategies, no deviation for BalancedAllocation
        return np.full(m, MAX_NODE_SCORE if strategy == BALANCED_ALLOCATION else 0, dtype=np.int64)
    cols = [column(snapshot, name, use_requested) for name in pl.names]
    stack = _alloc_stack(snapshot, pl.names, [c[0] for c in cols if c is not None])
    if strategy != BALANCED_ALLOCATION and not stack.exact:
        return _int_scores(strategy, pl, rtcr_table, cols, idx)
    af = stack.af.take(idx, axis=1)
    # requested = what the node's pods ask + the pod's request, summed in int64 as upstream does, then
    # converted as float64(int64) is (one conversion up front: mixed-type operations are slow per element)
    ui = np.empty((n_res, m), dtype=np.int64)
    for k, c in enumerate(cols):
        ui[k] = c[1][idx]  # type: ignore[index]
    ui += pl.p
    u = ui.astype(np.float64)
    if strategy == BALANCED_ALLOCATION:
        return _balanced(af, u, stack.all_valid)
    valid = None
    if not stack.all_valid:
        valid = af != 0
        if valid.all():
            valid = None  # the nodes being scored all have every resource
        else:
            af[~valid] = 1.0  # divide by 1 where the capacity is 0; those entries are dropped below
    # Every strategy first caps the requested amount at the capacity: LeastAllocated's free capacity of an
    # over-committed resource is then 0, MostAllocated counts it as full, and the ratio's utilization is 100.
    # (numpy's minimum of two arrays is much faster than a maximum/minimum against a scalar.)
    f = np.minimum(u, af, out=u)
    if strategy == LEAST_ALLOCATED:
        np.subtract(af, f, out=f)
    f *= float(MAX_NODE_SCORE if strategy != REQUESTED_TO_CAPACITY_RATIO else MAX_UTILIZATION)
    f /= af
    if strategy == REQUESTED_TO_CAPACITY_RATIO:
        return _ratio_scores(f, valid, pl, rtcr_table)
    if valid is None:
        si = f.astype(np.int64)  # truncation is the floor here: the quotients are >= 0
        if pl.equal_weights:
            # w * sum(s) // (w * n) == sum(s) // n
            if n_res == 1:
                return si[0]
            if n_res == 2:
                ns = si[0] + si[1]
                return np.right_shift(ns, 1, out=ns)  # // 2 of a non-negative integer
            return si.sum(axis=0) // n_res
        return (pl.wi @ si) // sum(pl.weights)
    np.floor(f, out=f)
    f *= valid
    ns = pl.w @ f
    ns /= np.maximum(pl.w @ valid, 1.0)  # no weight counted -> ns is 0 -> score 0
    return np.floor(ns, out=ns).astype(np.int64)


def _ratio_scores(f: np.ndarray, valid: np.ndarray | None, pl: Plan, rtcr_table: np.ndarray | None) -> np.ndarray:
    """RequestedToCapacityRatio from utilization quotients: 0..100 (over-committed = 100) through the shape's
    lookup table, then the weighted mean of the positive scores rounded half away from zero."""
    assert rtcr_table is not None
    sc = rtcr_table[f.astype(np.int64)]  # utilization in 0..100; truncation is the floor as it is >= 0
    if valid is not None:
        sc *= valid
    ns = pl.w @ sc
    ws = np.maximum(pl.w @ (sc > 0), 1.0)  # only positive scores bring their weight; none -> ns is 0 -> 0
    # math.Round(ns / ws) for non-negative integers: floor((2 ns + ws) / (2 ws)), exact in float64 here
    ns *= 2.0
    ns += ws
    ws *= 2.0
    ns /= ws
    return ns.astype(np.int64)


def _balanced(af: np.ndarray, u: np.ndarray, all_valid: bool) -> np.ndarray:
    """(1 - std of the used fractions) * 100, truncated, with upstream's float64 operations in its order."""
    n_res, m = af.shape
    valid = None if all_valid else af != 0
    if valid is not None and bool(valid.all()):
        valid = None
    # float64(requested) / float64(allocatable), capped at 1: dividing min(requested, allocatable) instead gives
    # the same bits (x / x is exactly 1) with a faster array-array minimum
    cap = af if valid is None else np.where(valid, af, 1.0)
    np.minimum(u, cap, out=u)
    frac = np.divide(u, cap, out=u)
    if valid is None and n_res <= 2:
        if n_res < 2:
            return np.full(m, MAX_NODE_SCORE, dtype=np.int64)  # one fraction has no deviation
        std = np.abs((frac[0] - frac[1]) / 2)
    elif valid is None:
        # every node has every resource: the general formula, summing in upstream's order
        total = frac[0].copy()
        for f in frac[1:]:
            total += f
        mean = total / float(n_res)
        d = frac - mean
        d *= d
        ss = d[0].copy()
        for sq in d[1:]:
            ss += sq
        ss /= float(n_res)
        std = np.sqrt(ss, out=ss)
    else:
        # Some nodes lack some resources: those fractions are skipped. Zeroed, they add 0.0 to the running sums,
        # which leaves them as upstream's sums over the remaining fractions in order.
        frac *= valid
        count = valid.sum(axis=0)
        total = frac[0].copy()
        for f in frac[1:]:
            total += f
        safe = np.maximum(count, 1).astype(np.float64)
        mean = total / safe
        d = frac - mean
        d *= d
        d *= valid
        ss = d[0].copy()
        for sq in d[1:]:
            ss += sq
        ss /= safe
        std3 = np.sqrt(ss, out=ss)
        # two fractions: upstream's |f0 - f1| / 2, which is (largest - smallest) / 2 of the two
        hi = np.where(valid, frac, -np.inf).max(axis=0)
        lo = np.where(valid, frac, np.inf).min(axis=0)
        std2 = np.abs((hi - lo) / 2)
        std = np.where(count == 2, std2, np.where(count > 2, std3, 0.0))
    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)  # int64() truncates; the value is >= 0


def _int_scores(
    strategy: str,
    pl: Plan,
    rtcr_table: np.ndarray | None,
    cols: list[tuple[np.ndarray, np.ndarray] | None],
    idx: np.ndarray,
) -> np.ndarray:
    """The integer strategies in int64 throughout, for capacities too large for the float64 shortcut."""
    m = len(idx)
    node_score = np.zeros(m, dtype=np.int64)
    weight_sum = np.zeros(m, dtype=np.int64)
    for w, c, pr in zip(pl.weights, cols, pl.pod_requests, strict=True):
        assert c is not None
        alloc = c[0][idx]
        req = c[1][idx] + pr
        valid = alloc != 0
        cap = np.where(valid, alloc, 1)
        if strategy == LEAST_ALLOCATED:
            s = np.maximum(cap - req, 0) * MAX_NODE_SCORE // cap
            count = valid
        elif strategy == MOST_ALLOCATED:
            s = np.minimum(req, cap) * MAX_NODE_SCORE // cap
            count = valid
        else:
            assert rtcr_table is not None
            util = np.where(req > cap, MAX_UTILIZATION, req * MAX_UTILIZATION // cap)
            s = rtcr_table[util]
            count = valid & (s > 0)
        node_score += np.where(count, s * w, 0)
        weight_sum += np.where(count, w, 0)
    ws = np.maximum(weight_sum, 1)  # where no weight counted, node_score is 0 and so is the result
    if strategy in (LEAST_ALLOCATED, MOST_ALLOCATED):
        return node_score // ws
    return (2 * node_score + ws) // (2 * ws)


def free_threshold(snapshot: Snapshot, name: str, alloc: np.ndarray, amount: int) -> np.ndarray:
    """allocatable - amount per node, memoised while no Node changes: pods of one workload ask the same
    amounts, so the Filter then needs one comparison per resource instead of two operations."""
    memo: dict[int, np.ndarray] = snapshot.node_derived(("NodeResources/free-threshold", name), dict)
    t = memo.get(amount)
    if t is None:
        if len(memo) >= 64:
            memo.clear()
        t = memo[amount] = alloc - amount
    return t
