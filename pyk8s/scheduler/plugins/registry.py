"""The plugin registry (upstream: plugins/registry.go NewInTreeRegistry) and the assembly of a profile's
Framework from a KubeSchedulerConfiguration.

Out-of-tree plugins are found through the Python entry-point group `pyk8s.scheduler.plugins`: each entry
point names a plugin class (with `name` and `new(args, handle)`), registered under the class's `name`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from ..config import ConfigError, SchedulerConfig
from ..framework.handle import FrameworkHandle
from ..framework.interface import EXTENSION_POINTS, Plugin, PluginFactory
from ..framework.runtime import Framework, FrameworkError

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "pyk8s.scheduler.plugins"


def in_tree_plugins() -> list[type[Plugin]]:
    from .defaultbinder import DefaultBinder
    from .defaultpreemption import DefaultPreemption
    from .imagelocality import ImageLocality
    from .interpodaffinity.plugin import InterPodAffinity
    from .nodeaffinity import NodeAffinity
    from .nodename import NodeName
    from .nodeports import NodePorts
    from .noderesources.balanced_allocation import NodeResourcesBalancedAllocation
    from .noderesources.fit import NodeResourcesFit
    from .nodeunschedulable import NodeUnschedulable
    from .nodevolumelimits import CSILimits
    from .podtopologyspread.plugin import PodTopologySpread
    from .queuesort import PrioritySort
    from .schedulinggates import SchedulingGates
    from .tainttoleration import TaintToleration
    from .volumebinding.plugin import VolumeBinding
    from .volumerestrictions import VolumeRestrictions
    from .volumezone import VolumeZone

    return [
        SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
        NodeResourcesFit, VolumeRestrictions, CSILimits, VolumeBinding, VolumeZone, PodTopologySpread,
        InterPodAffinity, DefaultPreemption, NodeResourcesBalancedAllocation, ImageLocality, DefaultBinder,
    ]  # fmt: skip


def _out_of_tree() -> list[type[Plugin]]:
    found: list[type[Plugin]] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = ep.load()
        except Exception as e:  # a broken third-party plugin must not stop the scheduler from starting
            log.error("loading scheduler plugin entry point %s: %s", ep.name, e)
            continue
        if not getattr(cls, "name", "") or not callable(getattr(cls, "new", None)):
            log.error("scheduler plugin entry point %s: %r has no name or new(args, handle)", ep.name, cls)
            continue
        found.append(cls)
    return found


def plugin_classes() -> dict[str, type[Plugin]]:
    classes = {cls.name: cls for cls in in_tree_plugins()}
    for cls in _out_of_tree():
        if cls.name in classes:
            log.error("scheduler plugin %s from an entry point is already registered; ignored", cls.name)
            continue
        classes[cls.name] = cls
    return classes


def in_tree_registry() -> dict[str, PluginFactory]:
    return {name: cls.new for name, cls in plugin_classes().items()}  # type: ignore[attr-defined]


def _implements(classes: dict[str, type[Plugin]]) -> Callable[[str, str], bool]:
    def implements(name: str, point: str) -> bool:
        cls = classes.get(name)
        base = EXTENSION_POINTS.get(point)
        return cls is not None and base is not None and issubclass(cls, base)

    return implements


def build_framework(
    config: SchedulerConfig, profile_name: str, handle: FrameworkHandle, *, vectorized: bool = True
) -> Framework:
    """The Framework of the profile named `profile_name` (its schedulerName)."""
    profile = next((p for p in config.profiles if p.scheduler_name == profile_name), None)
    if profile is None:
        raise FrameworkError(f"no profile with schedulerName {profile_name!r}")
    classes = plugin_classes()
    try:
        plugins = profile.expand(_implements(classes), registry=classes.keys())
    except ConfigError as e:
        raise FrameworkError(
            f"initializing profiles: creating profile for scheduler name {profile_name}: {e}"
        ) from None
    pct = profile.percentage_of_nodes_to_score
    return Framework(
        profile.scheduler_name,
        plugins,
        {name: cls.new for name, cls in classes.items()},  # type: ignore[attr-defined]
        profile.plugin_args,
        handle,
        percentage_of_nodes_to_score=pct if pct is not None else config.percentage_of_nodes_to_score,
        vectorized=vectorized,
    )


def check_profiles(config: SchedulerConfig, feature_gates: dict[str, bool] | None = None) -> None:
    """Build every profile's Framework once offline, with the gates the scheduler will run with, so a bad plugin
    list or plugin args fail at startup (upstream: "couldn't create scheduler: …"). Raises FrameworkError."""
    for p in config.profiles:
        build_framework(config, p.scheduler_name, FrameworkHandle(feature_gates=feature_gates))


def build_frameworks(config: SchedulerConfig, new_handle: Callable[[], FrameworkHandle]) -> dict[str, Framework]:
    """One Framework per profile, each with a handle of its own."""
    return {p.scheduler_name: build_framework(config, p.scheduler_name, new_handle()) for p in config.profiles}


def framework_with_plugins(
    entries: list[dict[str, Any]], handle: FrameworkHandle, config: SchedulerConfig
) -> Framework:
    """A Framework running exactly `entries` ({name, args?, weight?}) at every extension point each implements,
    in the given order; a Score weight defaults to the default profile's weight for that plugin, else 1. Args
    are merged over the profile's defaulted args. A QueueSort and a Bind plugin are not required."""
    classes = plugin_classes()
    default_profile = config.profiles[0]
    default_weights = {n: w for n, w in default_profile.expand(_implements(classes), registry=classes.keys())["score"]}
    defaults = default_profile.plugin_args
    plugins: dict[str, list[tuple[str, int]]] = {point: [] for point in EXTENSION_POINTS}
    args: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(entries):
        name = entry["name"]
        cls = classes.get(name)
        if cls is None:
            raise ValueError(f'plugins[{i}].name: plugin "{name}" does not exist')
        weight = entry.get("weight") or default_weights.get(name, 1)
        for point, base in EXTENSION_POINTS.items():
            if issubclass(cls, base):
                plugins[point].append((name, weight if point == "score" else 0))
        merged = dict(defaults.get(name) or {})
        merged.update(entry.get("args") or {})
        args[name] = merged
    factories: dict[str, PluginFactory] = {n: c.new for n, c in classes.items()}  # type: ignore[attr-defined]
    try:
        return Framework(default_profile.scheduler_name, plugins, factories, args, handle, require_bind=False)
    except FrameworkError as e:
        raise ValueError(str(e)) from None
