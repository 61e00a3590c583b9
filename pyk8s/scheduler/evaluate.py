"""`pyk8s scheduler evaluate` and `explain`: every plugin's verdict on one pod over given nodes, without an API
server (or, for `explain`, over the live cluster's objects).

Unlike a scheduling cycle, which stops at a node's first failing Filter, this runs every PreFilter, every
Filter on every node, every PreScore and Score, so each plugin's answer is visible. The answer has two parts:

- what each plugin says of every candidate node — the scenario's `candidateNodes`, by default every node, those
  a PreFilter or Filter rejected too. PreScore runs once over all of them, then Score on each and NormalizeScore
  over them together, as upstream's plugin unit tests score nodes: `preScore` (each plugin's status),
  `rawScore` (Score's answer), `score` (after NormalizeScore, before weights; `{"error": ...}` when the plugin
  failed) and `weights`;
- what the scheduler decides: PreScore, Score and NormalizeScore run again over the feasible nodes alone — every
  node each PreFilter and Filter passed (none when a PreFilter rejected the pod), as with percentageOfNodesToScore
  100 — because PreScore's state and NormalizeScore's range depend on which nodes are scored. `decisionScore` is
  each plugin's normalised score there, `totalScore` the weighted sum per feasible node, `selectedNode` the best
  (upstream breaks ties at random; here the first in the scheduler's node order wins, so answers are
  repeatable; a lone feasible node is chosen whatever its scores, as upstream does not score it), and `error`
  the cycle's error when a PreScore or Score plugin failed there (then no node is selected, but a lone one).

So a feasible node's `score` can differ from its `decisionScore` when the rejected nodes change what PreScore
computed or widen NormalizeScore's range.
"""

from __future__ import annotations

from typing import Any

from .cache import SchedulerCache
from .config import SchedulerConfig, default_config
from .framework.equivalence import ScoreError
from .framework.features import FeatureGateError, process_gates_set, resolve_feature_gates
from .framework.handle import FrameworkHandle, StaticLister
from .framework.interface import Code, CycleState, NodeScore, Status
from .framework.runtime import Framework
from .framework.snapshot import Snapshot
from .framework.types import NodeInfo
from .plugins.registry import build_framework, framework_with_plugins


class ScenarioError(ValueError):
    """A scenario that is not what `evaluate` reads (the message names the field)."""


def _status_json(st: Status | None) -> dict[str, Any]:
    if st is None:
        return {"code": "Success", "reasons": []}
    return {"code": str(st.code), "reasons": list(st.reasons)}


def _require_list(scenario: dict[str, Any], key: str, required: bool = False) -> list[dict[str, Any]]:
    value = scenario.get(key)
    if value is None:
        if required:
            raise ScenarioError(f"{key}: Required value")
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ScenarioError(f"{key}: must be a list of objects")
    return value


def _snapshot(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Snapshot:
    cache = SchedulerCache()
    for i, n in enumerate(nodes):
        if not (n.get("metadata") or {}).get("name"):
            raise ScenarioError(f"nodes[{i}].metadata.name: Required value")
        cache.add_node(n)
    for i, p in enumerate(pods):
        md = p.get("metadata") or {}
        if not md.get("name") or not (p.get("spec") or {}).get("nodeName"):
            raise ScenarioError(f"existingPods[{i}]: needs metadata.name and spec.nodeName")
        p = {
            **p,
            "metadata": {**md, "uid": md.get("uid") or f"existing-{i}", "namespace": md.get("namespace") or "default"},
        }
        cache.add_pod(p)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return snapshot


def _normalise_pod(pod: Any) -> dict[str, Any]:
    if not isinstance(pod, dict) or not (pod.get("metadata") or {}).get("name"):
        raise ScenarioError("pod: Required value (a Pod with metadata.name)")
    md = pod["metadata"]
    return {
        **pod,
        "metadata": {**md, "namespace": md.get("namespace") or "default", "uid": md.get("uid") or "evaluated-pod"},
        "spec": pod.get("spec") or {},
    }


def build_evaluation_framework(scenario: dict[str, Any], config: SchedulerConfig | None = None) -> Framework:
    config = config or default_config()
    nodes = _require_list(scenario, "nodes", required=True)
    existing = _require_list(scenario, "existingPods")
    objects = StaticLister({"namespaces": _require_list(scenario, "namespaces")})
    extra = scenario.get("objects") or {}
    if not isinstance(extra, dict):
        raise ScenarioError("objects: must be a map of resource plural to a list of objects")
    for resource, items in extra.items():
        for obj in items or ():
            objects.add(resource, obj)
    requested = scenario.get("featureGates") or {}
    if not isinstance(requested, dict) or not all(isinstance(v, bool) for v in requested.values()):
        raise ScenarioError("featureGates: must be a map of name to bool")
    try:
        gates, _ = resolve_feature_gates(requested)
    except FeatureGateError as e:
        raise ScenarioError(f"featureGates: {e}") from None
    with process_gates_set(gates):  # the existing pods are counted as the scheduler would count them
        snapshot = _snapshot(nodes, existing)
    handle = FrameworkHandle(snapshot, objects, feature_gates=gates)
    plugins = scenario.get("plugins")
    if plugins is not None:
        if not isinstance(plugins, list) or not all(isinstance(p, dict) and p.get("name") for p in plugins):
            raise ScenarioError("plugins: must be a list of {name, args?, weight?}")
        return framework_with_plugins(plugins, handle, config)
    pod = _normalise_pod(scenario.get("pod"))
    profile = (pod.get("spec") or {}).get("schedulerName") or config.profiles[0].scheduler_name
    return build_framework(config, profile, handle)


def evaluate(scenario: dict[str, Any], config: SchedulerConfig | None = None) -> dict[str, Any]:
    """Run every plugin of the profile (or the scenario's `plugins`) on the scenario; answer the JSON result."""
    if not isinstance(scenario, dict):
        raise ScenarioError("the scenario must be a JSON object")
    pod = _normalise_pod(scenario.get("pod"))
    fw = build_evaluation_framework(scenario, config)
    snapshot = fw.handle.snapshot
    nodes = snapshot.node_info_list
    state = CycleState()
    out: dict[str, Any] = {"preFilter": {}, "filter": {}}

    # PreFilter: each plugin on its own, none stopping the others.
    rejected_by_pre_filter: dict[str, Status] = {}
    allowed: set[str] | None = None
    st: Status | None
    for plugin in fw.points["preFilter"]:
        try:
            result, st = plugin.pre_filter(state, pod, nodes)
        except Exception as e:
            result, st = None, Status.as_error(e)
        entry = _status_json(st)
        if result is not None and result.node_names is not None:
            entry["nodeNames"] = sorted(result.node_names)
            allowed = set(result.node_names) if allowed is None else allowed & result.node_names
        out["preFilter"][plugin.name] = entry
        if st is not None and st.code == Code.SKIP:
            state.skip_filter_plugins.add(plugin.name)
        elif st is not None and st.code != Code.SUCCESS:
            rejected_by_pre_filter[plugin.name] = st

    # Filter: every plugin on every node.
    feasible = {ni.name for ni in nodes}
    if rejected_by_pre_filter:
        feasible.clear()
    if allowed is not None:
        feasible &= allowed
    for plugin in fw.points["filter"]:
        verdicts: dict[str, Any] = {}
        for ni in nodes:
            if plugin.name in rejected_by_pre_filter:
                st = rejected_by_pre_filter[plugin.name]
            elif plugin.name in state.skip_filter_plugins:
                verdicts[ni.name] = {"code": "Skip", "reasons": []}
                continue
            else:
                try:
                    st = plugin.filter(state, pod, ni)
                except Exception as e:
                    st = Status.as_error(e)
            verdicts[ni.name] = _status_json(st)
            if st is not None and st.code != Code.SUCCESS:
                feasible.discard(ni.name)
        out["filter"][plugin.name] = verdicts

    # The scores a researcher reads: PreScore over the candidate nodes, then Score and NormalizeScore over them.
    candidates = scenario.get("candidateNodes")
    if candidates is None:
        score_nodes = nodes
    else:
        if not isinstance(candidates, list):
            raise ScenarioError("candidateNodes: must be a list of node names")
        unknown = [c for c in candidates if c not in snapshot.positions]
        if unknown:
            raise ScenarioError(f"candidateNodes: Not found: {unknown[0]!r}")
        score_nodes = [snapshot.get(c) for c in candidates]  # type: ignore[misc]
    # The decision first, so nothing the other pass leaves in a plugin can reach it.
    decision = _decide(fw, state.clone(), pod, [i for i, ni in enumerate(nodes) if ni.name in feasible])
    out.update(_score_each_plugin(fw, state.clone(), pod, score_nodes))
    out["weights"] = {plugin.name: fw.score_weights.get(plugin.name, 1) for plugin in fw.points["score"]}
    out.update(decision)
    return out


def _score_each_plugin(fw: Framework, state: CycleState, pod: dict[str, Any], nodes: list[NodeInfo]) -> dict[str, Any]:
    """Each plugin on its own over `nodes`, as upstream's plugin unit tests score nodes: a PreScore, Score or
    NormalizeScore failure shows as that plugin's error and the others still run."""
    out: dict[str, Any] = {"preScore": {}, "rawScore": {}, "score": {}}
    st: Status | None
    for plugin in fw.points["preScore"]:
        try:
            st = plugin.pre_score(state, pod, nodes)
        except Exception as e:
            st = Status.as_error(e)
        out["preScore"][plugin.name] = {"code": str(Code.SUCCESS if st is None else st.code),
                                        "message": "" if st is None else st.message()}  # fmt: skip
        if st is not None and st.code == Code.SKIP:
            state.skip_score_plugins.add(plugin.name)
    for plugin in fw.points["score"]:
        if plugin.name in state.skip_score_plugins:
            continue
        scores: list[NodeScore] = []
        failed: Status | None = None
        for ni in nodes:
            try:
                s, st = plugin.score(state, pod, ni)
            except Exception as e:
                s, st = 0, Status.as_error(e)
            if st is not None and st.code != Code.SUCCESS:
                failed = st
                break
            scores.append(NodeScore(ni.name, int(s)))
        raw = {ns.name: ns.score for ns in scores}
        if failed is None:
            ext = plugin.score_extensions()
            if ext is not None:
                try:
                    failed = ext.normalize_score(state, pod, scores)
                except Exception as e:
                    failed = Status.as_error(e)
        if failed is not None and failed.code != Code.SUCCESS:
            error = {"error": failed.message()}
            out["rawScore"][plugin.name] = error if len(raw) < len(nodes) else raw
            out["score"][plugin.name] = error
            continue
        out["rawScore"][plugin.name] = raw
        out["score"][plugin.name] = {ns.name: ns.score for ns in scores}
    return out


def _decide(fw: Framework, state: CycleState, pod: dict[str, Any], feasible: list[int]) -> dict[str, Any]:
    """The scheduling cycle's choice among the feasible nodes (positions): the framework's own PreScore and Score
    runs over exactly those nodes, since what PreScore computes and what NormalizeScore scales by depend on
    which nodes are scored. The first best node in node order wins where upstream picks one at random."""
    out: dict[str, Any] = {"decisionScore": {}, "totalScore": {}, "selectedNode": None}
    if not feasible:
        return out
    node_infos = fw.handle.snapshot.node_info_list
    names = [node_infos[i].name for i in feasible]
    if len(feasible) == 1:
        out["selectedNode"] = names[0]  # a cycle with one feasible node takes it without scoring
    st = fw.run_pre_score_plugins(state, pod, [node_infos[i] for i in feasible])
    if st is not None:
        out["error"] = st.message()
        return out
    try:
        totals, per_plugin = fw.run_score_plugins(state, pod, feasible, per_plugin=True)
    except ScoreError as e:
        out["error"] = e.status.message()
        return out
    out["decisionScore"] = {p: dict(zip(names, s.tolist(), strict=True)) for p, s in per_plugin.items()}
    out["totalScore"] = dict(zip(names, totals.tolist(), strict=True))
    out["selectedNode"] = names[int(totals.argmax())]
    return out
