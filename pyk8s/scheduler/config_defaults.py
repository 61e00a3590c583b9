"""The v1 defaults kube-scheduler v1.32 applies to a KubeSchedulerConfiguration's profiles: the default plugin
set (all as MultiPoint plugins), how a profile's own plugin settings are merged into it, the pluginConfig args
types the v1 scheme knows with their defaults and their validation.

Upstream: pkg/scheduler/apis/config/v1/default_plugins.go, v1/defaults.go (the SetDefaults_*Args functions),
staging kube-scheduler/config/v1/types_pluginargs.go and apis/config/validation/validation_pluginargs.go.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api import errors as e
from ..api.errors import FieldError
from ..api.validation import is_label_value, is_qualified_name
from .config_decode import BOOL, INT32, INT64, STRING, GoValue, ListOf, MapOf, Struct, child, index

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"

# The extension points a profile's `plugins` names, in the order upstream's v1 Plugins type lists them.
EXTENSION_POINTS: tuple[str, ...] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
)

# Upstream's v1.32 default plugins, every one enabled through MultiPoint; weights only matter for Score.
DEFAULT_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)

# Plugins removed from the v1 API: naming them is a validation error.
INVALID_V1_PLUGINS: tuple[str, ...] = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")

# MaxCustomPriorityScore: the top of a utilization shape's score range.
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass
class PluginSet:
    """One extension point's settings: enabled plugins as (name, weight or None) in order, and the names of
    disabled ones ("*" disables every default plugin there)."""

    enabled: list[tuple[str, int | None]] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)

    def go_value(self) -> GoValue:
        """Go's %#v of the internal config.PluginSet (how upstream prints it in a field error)."""

        def plugins(items: list[str]) -> str:
            return "[]config.Plugin{" + ", ".join(items) + "}" if items else "[]config.Plugin(nil)"

        enabled = [f"config.Plugin{{Name:{e.go_quote(n)}, Weight:{w or 0}}}" for n, w in self.enabled]
        disabled = [f"config.Plugin{{Name:{e.go_quote(n)}, Weight:0}}" for n in self.disabled]
        return GoValue(f"config.PluginSet{{Enabled:{plugins(enabled)}, Disabled:{plugins(disabled)}}}")


def default_plugins(feature_gates: Mapping[str, bool]) -> dict[str, PluginSet]:
    """Upstream's getDefaultPlugins: every default as MultiPoint; DynamicResources goes just before
    DefaultPreemption when DynamicResourceAllocation is on (freeing an idle claim beats evicting a pod)."""
    enabled = list(DEFAULT_MULTI_POINT)
    if feature_gates.get("DynamicResourceAllocation", False):
        at = next(i for i, (name, _) in enumerate(enabled) if name == "DefaultPreemption")
        enabled.insert(at, ("DynamicResources", None))
    out = {point: PluginSet() for point in EXTENSION_POINTS}
    out["multiPoint"] = PluginSet(enabled=enabled)
    return out


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream's mergePluginSet: defaults keep their order unless disabled ("*" drops them all); a default
    the user enables again takes the user's entry (weight) in the default's place; the user's other enabled
    plugins follow in their order. Disabled lists are kept (user's first) so that MultiPoint expansion at
    runtime can skip disabled plugins. A repeated custom plugin is kept twice (the framework rejects it)."""
    disabled = list(custom.disabled) + list(default.disabled)
    disabled_set = set(disabled)
    # The last occurrence of a repeated custom name is the one that replaces the default.
    custom_by_name = {name: (i, (name, weight)) for i, (name, weight) in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[tuple[str, int | None]] = []
    if "*" not in disabled_set:
        for plugin in default.enabled:
            if plugin[0] in disabled_set:
                continue
            if plugin[0] in custom_by_name:
                at, plugin = custom_by_name[plugin[0]]
                replaced.add(at)
            enabled.append(plugin)
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_plugins(defaults: dict[str, PluginSet], custom: Mapping[str, PluginSet] | None) -> dict[str, PluginSet]:
    """Upstream's mergePlugins over every extension point (MultiPoint included)."""
    if custom is None:
        return defaults
    return {p: merge_plugin_set(defaults.get(p, PluginSet()), custom.get(p, PluginSet())) for p in EXTENSION_POINTS}


# ---------------------------------------------------------------------------------------------------------
# pluginConfig args types the v1 scheme registers (as "<Plugin>Args"), in their JSON shape.

_TYPE_META = {"apiVersion": STRING, "kind": STRING}
_RESOURCE_SPEC = Struct("ResourceSpec", {"name": STRING, "weight": INT64})
_SHAPE_POINT = Struct("UtilizationShapePoint", {"utilization": INT32, "score": INT32})
_LABEL_SELECTOR = Struct(
    "LabelSelector",
    {
        "matchLabels": MapOf(STRING),
        "matchExpressions": ListOf(
            Struct("LabelSelectorRequirement", {"key": STRING, "operator": STRING, "values": ListOf(STRING)})
        ),
    },
)
_TOPOLOGY_SPREAD_CONSTRAINT = Struct(
    "TopologySpreadConstraint",
    {
        "maxSkew": INT32,
        "topologyKey": STRING,
        "whenUnsatisfiable": STRING,
        "labelSelector": _LABEL_SELECTOR,
        "minDomains": INT32,
        "nodeAffinityPolicy": STRING,
        "nodeTaintsPolicy": STRING,
        "matchLabelKeys": ListOf(STRING),
    },
)
_NODE_SELECTOR_REQUIREMENT = Struct(
    "NodeSelectorRequirement", {"key": STRING, "operator": STRING, "values": ListOf(STRING)}
)
_NODE_SELECTOR_TERM = Struct(
    "NodeSelectorTerm",
    {"matchExpressions": ListOf(_NODE_SELECTOR_REQUIREMENT), "matchFields": ListOf(_NODE_SELECTOR_REQUIREMENT)},
)
_NODE_AFFINITY = Struct(
    "NodeAffinity",
    {
        "requiredDuringSchedulingIgnoredDuringExecution": Struct(
            "NodeSelector", {"nodeSelectorTerms": ListOf(_NODE_SELECTOR_TERM)}
        ),
        "preferredDuringSchedulingIgnoredDuringExecution": ListOf(
            Struct("PreferredSchedulingTerm", {"weight": INT32, "preference": _NODE_SELECTOR_TERM})
        ),
    },
)

ARGS_SCHEMAS: dict[str, Struct] = {
    "DefaultPreemption": Struct(
        "DefaultPreemptionArgs",
        {**_TYPE_META, "minCandidateNodesPercentage": INT32, "minCandidateNodesAbsolute": INT32},
    ),
    "InterPodAffinity": Struct(
        "InterPodAffinityArgs",
        {**_TYPE_META, "hardPodAffinityWeight": INT32, "ignorePreferredTermsOfExistingPods": BOOL},
    ),
    "NodeAffinity": Struct("NodeAffinityArgs", {**_TYPE_META, "addedAffinity": _NODE_AFFINITY}),
    "NodeResourcesBalancedAllocation": Struct(
        "NodeResourcesBalancedAllocationArgs", {**_TYPE_META, "resources": ListOf(_RESOURCE_SPEC)}
    ),
    "NodeResourcesFit": Struct(
        "NodeResourcesFitArgs",
        {
            **_TYPE_META,
            "ignoredResources": ListOf(STRING),
            "ignoredResourceGroups": ListOf(STRING),
            "scoringStrategy": Struct(
                "ScoringStrategy",
                {
                    "type": STRING,
                    "resources": ListOf(_RESOURCE_SPEC),
                    "requestedToCapacityRatio": Struct(
                        "RequestedToCapacityRatioParam", {"shape": ListOf(_SHAPE_POINT)}
                    ),
                },
            ),
        },
    ),
    "PodTopologySpread": Struct(
        "PodTopologySpreadArgs",
        {**_TYPE_META, "defaultConstraints": ListOf(_TOPOLOGY_SPREAD_CONSTRAINT), "defaultingType": STRING},
    ),
    "VolumeBinding": Struct(
        "VolumeBindingArgs", {**_TYPE_META, "bindTimeoutSeconds": INT64, "shape": ListOf(_SHAPE_POINT)}
    ),
}


def _default_resources() -> list[dict[str, Any]]:
    return [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def default_plugin_args(name: str, args: Mapping[str, Any] | None, feature_gates: Mapping[str, bool]) -> dict[str, Any]:
    """A copy of a known plugin's args with upstream's v1 defaults filled in (SetDefaults_<Plugin>Args)."""
    a: dict[str, Any] = copy.deepcopy(dict(args or {}))
    if name == "DefaultPreemption":
        a.setdefault("minCandidateNodesPercentage", 10)
        a.setdefault("minCandidateNodesAbsolute", 100)
    elif name == "InterPodAffinity":
        a.setdefault("hardPodAffinityWeight", 1)
    elif name == "VolumeBinding":
        a.setdefault("bindTimeoutSeconds", 600)
        if not a.get("shape") and feature_gates.get("VolumeCapacityPriority", False):
            a["shape"] = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": MAX_CUSTOM_PRIORITY_SCORE}]
    elif name == "NodeResourcesBalancedAllocation":
        if not a.get("resources"):
            a["resources"] = _default_resources()
        else:
            for r in a["resources"]:
                if not r.get("weight"):
                    r["weight"] = 1  # unset and 0 both mean the default weight
    elif name == "PodTopologySpread":
        if not a.get("defaultingType"):
            a["defaultingType"] = "System"
    elif name == "NodeResourcesFit":
        strategy = a.get("scoringStrategy")
        if strategy is None:
            a["scoringStrategy"] = {"type": "LeastAllocated", "resources": _default_resources()}
        else:
            if not strategy.get("resources"):
                strategy["resources"] = _default_resources()
            for r in strategy["resources"]:
                if not r.get("weight"):
                    r["weight"] = 1
    return a


# ---------------------------------------------------------------------------------------------------------
# Args validation (validation_pluginargs.go). Each returns field errors under `path` ("" for none, as the
# plugins themselves validate with a nil path).


def _label_name_errors(path: str, value: str) -> list[FieldError]:
    return [e.invalid(path, value, msg) for msg in is_qualified_name(value)]


def _go_strings(values: list[str] | None) -> GoValue:
    if values is None:
        return GoValue("[]string(nil)")
    return GoValue("[]string{" + ", ".join(e.go_quote(v) for v in values) + "}")


def _go_shape(shape: list[dict[str, Any]]) -> GoValue:
    points = ", ".join(
        f"config.UtilizationShapePoint{{Utilization:{p.get('utilization', 0)}, Score:{p.get('score', 0)}}}"
        for p in shape
    )
    return GoValue("[]config.UtilizationShapePoint{" + points + "}")


def validate_default_preemption_args(args: Mapping[str, Any], path: str = "") -> list[FieldError]:
    errs: list[FieldError] = []
    pct_path, abs_path = child(path, "minCandidateNodesPercentage"), child(path, "minCandidateNodesAbsolute")
    pct, absolute = args.get("minCandidateNodesPercentage", 0), args.get("minCandidateNodesAbsolute", 0)
    if pct < 0 or pct > 100:
        errs.append(e.invalid(pct_path, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(e.invalid(abs_path, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs.append(e.invalid(pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"))
        errs.append(e.invalid(abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"))
    return errs


def validate_inter_pod_affinity_args(args: Mapping[str, Any], path: str = "") -> list[FieldError]:
    w = args.get("hardPodAffinityWeight", 0)
    if w < 0 or w > 100:
        return [e.invalid(child(path, "hardPodAffinityWeight"), w, "not in valid range [0, 100]")]
    return []


def validate_pod_topology_spread_args(args: Mapping[str, Any], path: str = "") -> list[FieldError]:
    errs: list[FieldError] = []
    constraints = args.get("defaultConstraints") or []
    defaulting = args.get("defaultingType", "")
    if defaulting not in ("System", "List"):
        errs.append(e.not_supported(child(path, "defaultingType"), defaulting, ["System", "List"]))
    elif defaulting == "System" and constraints:
        errs.append(e.invalid(child(path, "defaultingType"), defaulting, "when .defaultConstraints are not empty"))
    cpath = child(path, "defaultConstraints")
    for i, c in enumerate(constraints):
        p = index(cpath, i)
        skew = c.get("maxSkew", 0)
        if skew <= 0:
            errs.append(e.invalid(child(p, "maxSkew"), skew, "not in valid range (0, inf)"))
        key = c.get("topologyKey", "")
        if not key:
            errs.append(e.required(child(p, "topologyKey"), "can not be empty"))
        else:
            errs.extend(_label_name_errors(child(p, "topologyKey"), key))
        when = c.get("whenUnsatisfiable", "")
        if not when:
            errs.append(e.required(child(p, "whenUnsatisfiable"), "can not be empty"))
        elif when not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(e.not_supported(child(p, "whenUnsatisfiable"), when, ["DoNotSchedule", "ScheduleAnyway"]))
        if "labelSelector" in c:
            errs.append(
                e.forbidden(
                    child(p, "labelSelector"), "constraint must not define a selector, as they deduced for each pod"
                )
            )
        for other in constraints[:i]:
            if other.get("topologyKey", "") == key and other.get("whenUnsatisfiable", "") == when:
                errs.append(e.duplicate(p, f"{{{key}, {when}}}"))
                break
    return errs


def validate_function_shape(shape: list[dict[str, Any]], path: str) -> list[FieldError]:
    if not shape:
        return [e.required(path, "at least one point must be specified")]
    errs: list[FieldError] = []
    for i in range(1, len(shape)):
        if shape[i - 1].get("utilization", 0) >= shape[i].get("utilization", 0):
            errs.append(
                e.invalid(
                    child(index(path, i), "utilization"),
                    shape[i].get("utilization", 0),
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        u, s = point.get("utilization", 0), point.get("score", 0)
        if u < 0 or u > 100:
            errs.append(e.invalid(child(index(path, i), "utilization"), u, "not in valid range [0, 100]"))
        if s < 0 or s > MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(
                e.invalid(child(index(path, i), "score"), s, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
            )
    return errs


def _validate_resources(resources: list[dict[str, Any]], path: str) -> list[FieldError]:
    errs = []
    for i, r in enumerate(resources):
        w = r.get("weight", 0)
        if w <= 0 or w > 100:
            msg = f"resource weight of {r.get('name', '')} not in valid range (0, 100]"
            errs.append(e.invalid(child(index(path, i), "weight"), w, msg))
    return errs


def validate_node_resources_balanced_allocation_args(args: Mapping[str, Any], path: str = "") -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    rpath = child(path, "resources")
    for i, r in enumerate(args.get("resources") or []):
        name = r.get("name", "")
        if name in seen:
            errs.append(e.duplicate(child(index(rpath, i), "name"), name))
        seen.add(name)
        if r.get("weight", 0) != 1:
            errs.append(e.invalid(child(index(rpath, i), "weight"), r.get("weight", 0), "must be 1"))
    return errs


def _requirement_errors(req: Mapping[str, Any], path: str, fields: bool) -> list[FieldError]:
    """One node selector requirement as component-helpers' nodeaffinity parses it (labels.NewRequirement
    for matchExpressions; In/NotIn with one value for matchFields)."""
    op, key, values = req.get("operator", ""), req.get("key", ""), req.get("values")
    vals = values or []
    if fields:
        if op in ("In", "NotIn"):
            return (
                []
                if len(vals) == 1
                else [e.invalid(child(path, "values"), _go_strings(values), "must have one element")]
            )
        return [e.not_supported(child(path, "operator"), op, ["In", "NotIn"])]
    ops = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    if op not in ops:
        return [e.not_supported(child(path, "operator"), op, ops)]
    errs: list[FieldError] = []
    key_problems = is_qualified_name(key)
    if key_problems:
        errs.append(e.invalid(child(path, "key"), key, "; ".join(key_problems)))
    vpath = child(path, "values")
    if op in ("In", "NotIn") and not vals:
        errs.append(e.invalid(vpath, _go_strings(values), "for 'in', 'notin' operators, values set can't be empty"))
    elif op in ("Exists", "DoesNotExist") and vals:
        errs.append(e.invalid(vpath, _go_strings(values), "values set must be empty for exists and does not exist"))
    elif op in ("Gt", "Lt"):
        if len(vals) != 1:
            errs.append(
                e.invalid(vpath, _go_strings(values), "for 'Gt', 'Lt' operators, exactly one value is required")
            )
        for i, v in enumerate(vals):
            try:
                int(v, 10)
            except ValueError:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errs.append(e.invalid(index(vpath, i), v, detail))
    for i, v in enumerate(vals):
        problems = is_label_value(v)
        if problems:
            errs.append(e.invalid(f"{index(vpath, i)}[{key}]", v, "; ".join(problems)))
    return errs


def _term_errors(term: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for kind, is_fields in (("matchExpressions", False), ("matchFields", True)):
        for i, req in enumerate(term.get(kind) or []):
            errs.extend(_requirement_errors(req, index(child(path, kind), i), is_fields))
    return errs


def validate_node_affinity_args(args: Mapping[str, Any], path: str = "") -> list[FieldError]:
    affinity = args.get("addedAffinity")
    if affinity is None:
        return []
    errs: list[FieldError] = []
    base = child(path, "addedAffinity")
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms_path = child(child(base, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms")
        for i, term in enumerate(required.get("nodeSelectorTerms") or []):
            # An empty term selects nothing and is not parsed.
            if term.get("matchExpressions") or term.get("matchFields"):
                errs.extend(_term_errors(term, index(terms_path, i)))
    pref_path = child(base, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, pref in enumerate(affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        term = pref.get("preference") or {}
        if pref.get("weight", 0) == 0 or not (term.get("matchExpressions") or term.get("matchFields")):
            continue
        errs.extend(_term_errors(term, index(pref_path, i)))  # upstream's path skips "preference"
    return errs


def validate_volume_binding_args(
    args: Mapping[str, Any], path: str = "", feature_gates: Mapping[str, bool] | None = None
) -> list[FieldError]:
    errs: list[FieldError] = []
    timeout = args.get("bindTimeoutSeconds", 0)
    if timeout < 0:
        detail = "invalid BindTimeoutSeconds, should not be a negative value"
        errs.append(e.invalid(child(path, "bindTimeoutSeconds"), timeout, detail))
    if (feature_gates or {}).get("VolumeCapacityPriority", False):
        errs.extend(validate_function_shape(args.get("shape") or [], child(path, "shape")))
    elif args.get("shape") is not None:
        # With the feature off a shape is refused, so it cannot silently start to apply once the gate is on.
        detail = "unexpected field `shape`, remove it or turn on the feature gate VolumeCapacityPriority"
        errs.append(e.invalid(child(path, "shape"), _go_shape(args["shape"]), detail))
    return errs


def validate_node_resources_fit_args(args: Mapping[str, Any], path: str = "") -> list[FieldError]:
    """NodeResourcesFitArgs as the plugin validates them when it is built. (Upstream's config validation
    keys this check under the wrong name, so a KubeSchedulerConfiguration only meets it at plugin creation.)"""
    errs: list[FieldError] = []
    for i, res in enumerate(args.get("ignoredResources") or []):
        errs.extend(_label_name_errors(index(child(path, "ignoredResources"), i), res))
    for i, group in enumerate(args.get("ignoredResourceGroups") or []):
        gpath = index(child(path, "ignoredResourceGroups"), i)
        if "/" in group:
            errs.append(e.invalid(gpath, group, "resource group name can't contain '/'"))
        errs.extend(_label_name_errors(gpath, group))
    spath = child(path, "scoringStrategy")
    strategy = args.get("scoringStrategy")
    if strategy is None:
        errs.append(e.required(spath, "ScoringStrategy field is required"))
        return errs
    kind = strategy.get("type", "")
    supported = ["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]
    if kind not in supported:
        errs.append(e.not_supported(child(spath, "type"), kind, supported))
    errs.extend(_validate_resources(strategy.get("resources") or [], child(spath, "resources")))
    ratio_path = child(spath, "requestedToCapacityRatio")
    if kind == "RequestedToCapacityRatio":
        ratio = strategy.get("requestedToCapacityRatio")
        if ratio is None:
            errs.append(e.required(ratio_path, "must be specified when type is RequestedToCapacityRatio"))
        else:
            errs.extend(validate_function_shape(ratio.get("shape") or [], child(ratio_path, "shape")))
    elif "requestedToCapacityRatio" in strategy:
        errs.append(e.forbidden(ratio_path, "must be nil when type is not RequestedToCapacityRatio"))
    return errs


def validate_plugin_args(
    name: str, args: Mapping[str, Any], path: str, feature_gates: Mapping[str, bool]
) -> list[FieldError]:
    """The args checks a KubeSchedulerConfiguration's validation runs for a plugin (none for plugins the
    v1.32 validation map does not list — NodeResourcesFit among them, see validate_node_resources_fit_args)."""
    if name == "DefaultPreemption":
        return validate_default_preemption_args(args, path)
    if name == "InterPodAffinity":
        return validate_inter_pod_affinity_args(args, path)
    if name == "NodeAffinity":
        return validate_node_affinity_args(args, path)
    if name == "NodeResourcesBalancedAllocation":
        return validate_node_resources_balanced_allocation_args(args, path)
    if name == "PodTopologySpread":
        return validate_pod_topology_spread_args(args, path)
    if name == "VolumeBinding":
        return validate_volume_binding_args(args, path, feature_gates)
    return []
