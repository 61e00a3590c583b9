"""Validation of a defaulted KubeSchedulerConfiguration with upstream's rules and messages: leader election
and client settings, parallelism, backoffs, profiles (names, percentages, removed plugins, plugin args,
one shared QueueSort) and extenders.

Upstream: pkg/scheduler/apis/config/validation/validation.go and component-base/config/validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..api import errors as e
from ..api.errors import FieldError, go_quote
from ..api.validation import is_qualified_name
from .config_decode import GoValue, child, go_duration_value, index
from .config_defaults import (
    API_VERSION,
    ARGS_SCHEMAS,
    EXTENSION_POINTS,
    INVALID_V1_PLUGINS,
    PluginSet,
    validate_plugin_args,
)
from .framework.features import DEFAULT_FEATURE_GATES

if TYPE_CHECKING:
    from .config import Extender, LeaderElection, Profile, SchedulerConfig


def validate_config(cfg: SchedulerConfig, feature_gates: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Every problem upstream's validation finds in a defaulted config, in its order."""
    gates = {**DEFAULT_FEATURE_GATES, **(feature_gates or {})}
    errs: list[FieldError] = []
    if cfg.client_connection.burst < 0:
        errs.append(e.invalid("clientConnection.burst", cfg.client_connection.burst, "must be non-negative"))
    errs.extend(_validate_leader_election(cfg.leader_election))
    if cfg.leader_election.leader_elect and cfg.leader_election.resource_lock != "leases":
        detail = 'resourceLock value must be "leases"'
        errs.append(e.invalid("leaderElection.resourceLock", cfg.leader_election.resource_lock, detail))
    if cfg.parallelism <= 0:
        errs.append(e.invalid("parallelism", cfg.parallelism, "should be an integer value greater than zero"))
    if not cfg.profiles:
        errs.append(e.required("profiles"))
    else:
        seen: dict[str, int] = {}
        for i, prof in enumerate(cfg.profiles):
            path = index("profiles", i)
            errs.extend(_validate_profile(path, prof, gates))
            if prof.scheduler_name in seen:
                first = child(index("profiles", seen[prof.scheduler_name]), "schedulerName")
                errs.append(e.duplicate(child(path, "schedulerName"), GoValue(first)))
            seen[prof.scheduler_name] = i
        errs.extend(_validate_common_queue_sort(cfg.profiles))
    errs.extend(_validate_percentage("percentageOfNodesToScore", cfg.percentage_of_nodes_to_score))
    if cfg.pod_initial_backoff_seconds <= 0:
        errs.append(e.invalid("podInitialBackoffSeconds", cfg.pod_initial_backoff_seconds, "must be greater than 0"))
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        detail = "must be greater than or equal to PodInitialBackoffSeconds"
        errs.append(e.invalid("podMaxBackoffSeconds", cfg.pod_max_backoff_seconds, detail))
    errs.extend(_validate_extenders(cfg.extenders))
    return errs


def _validate_leader_election(le: LeaderElection) -> list[FieldError]:
    if not le.leader_elect:
        return []
    errs: list[FieldError] = []
    for name, value in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if value <= 0:
            errs.append(e.invalid(child("leaderElection", name), go_duration_value(value), "must be greater than zero"))
    if le.lease_duration <= le.renew_deadline:
        detail = "must be greater than `RenewDeadline`"
        errs.append(e.invalid("leaderElection.leaseDuration", go_duration_value(le.renew_deadline), detail))
    for field, text in (
        ("resourceLock", le.resource_lock),
        ("resourceNamespace", le.resource_namespace),
        ("resourceName", le.resource_name),
    ):
        if not text:
            errs.append(e.required(child("leaderElection", field)))
    return errs


def _validate_percentage(path: str, value: int | None) -> list[FieldError]:
    if value is not None and (value < 0 or value > 100):
        return [e.invalid(path, value, "not in valid range [0-100]")]
    return []


def _removed_plugin_detail() -> str:
    return f"was invalid in version {go_quote(API_VERSION)} (KubeSchedulerConfiguration is version {go_quote(API_VERSION)})"


def _validate_profile(path: str, prof: Profile, gates: Mapping[str, bool]) -> list[FieldError]:
    errs: list[FieldError] = []
    if not prof.scheduler_name:
        errs.append(e.required(child(path, "schedulerName")))
    errs.extend(_validate_percentage(child(path, "percentageOfNodesToScore"), prof.percentage_of_nodes_to_score))
    # Removed plugins named at a specific extension point (upstream does not look at MultiPoint here).
    for point in EXTENSION_POINTS:
        if point == "multiPoint":
            continue
        for i, (name, _) in enumerate(prof.plugins.get(point, PluginSet()).enabled):
            if name in INVALID_V1_PLUGINS:
                errs.append(e.invalid(index(f"{path}.plugins.{point}.enabled", i), name, _removed_plugin_detail()))
    seen: set[str] = set()
    for i, pc in enumerate(prof.plugin_config):
        pc_path = index(child(path, "pluginConfig"), i)
        if pc.name in seen:
            errs.append(e.duplicate(pc_path, pc.name))
        seen.add(pc.name)
        if pc.name in INVALID_V1_PLUGINS:
            errs.append(e.invalid(pc_path, pc.name, _removed_plugin_detail()))
        elif pc.name in ARGS_SCHEMAS:
            errs.extend(validate_plugin_args(pc.name, pc.args, child(pc_path, "args"), gates))
    return errs


def _queue_sort_key(ps: PluginSet) -> tuple[list[tuple[str, int]], list[str]]:
    # Compared the way the internal type compares: unset weights are 0, nil and empty lists are equal.
    return [(n, w or 0) for n, w in ps.enabled], list(ps.disabled)


def _validate_common_queue_sort(profiles: list[Profile]) -> list[FieldError]:
    """All profiles share one scheduling queue, so they must agree on the QueueSort plugin and its args."""
    errs: list[FieldError] = []
    canon = profiles[0].plugins.get("queueSort", PluginSet())
    queue_sort_name = canon.enabled[0][0] if canon.enabled else ""
    if len(canon.enabled) > 1:
        path = "profiles[0].plugins.queueSort.Enabled"
        errs.append(e.invalid(path, len(canon.enabled), "only one queue sort plugin can be enabled"))
    canon_args = None
    for pc in profiles[0].plugin_config:
        if queue_sort_name and pc.name == queue_sort_name:
            canon_args = pc.args
    for i in range(1, len(profiles)):
        curr = profiles[i].plugins.get("queueSort", PluginSet())
        if _queue_sort_key(curr) != _queue_sort_key(canon):
            path = child(index("profiles", i), "plugins.queueSort")
            errs.append(e.invalid(path, curr.go_value(), "must be the same for all profiles"))
        for pc in profiles[i].plugin_config:
            if pc.name == queue_sort_name and pc.args != canon_args:
                path = child(index("profiles", i), "pluginConfig.args")
                errs.append(e.invalid(path, pc.args, "queueSort must be the same for all profiles"))
    return errs


def _is_extended_resource_name(name: str) -> bool:
    # Native resources are unprefixed or under kubernetes.io/; "requests." names are quota names.
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def _validate_extenders(extenders: list[Extender]) -> list[FieldError]:
    errs: list[FieldError] = []
    binders = 0
    managed: set[str] = set()
    for i, x in enumerate(extenders):
        path = index("extenders", i)
        if x.prioritize_verb and x.weight <= 0:
            errs.append(e.invalid(child(path, "weight"), x.weight, "must have a positive weight applied to it"))
        if x.bind_verb:
            binders += 1
        for j, res in enumerate(x.managed_resources):
            name_path = child(index(child(path, "managedResources"), j), "name")
            problems = is_qualified_name(res.name)
            errs.extend(e.invalid(name_path, res.name, msg) for msg in problems)
            if not problems and not _is_extended_resource_name(res.name):
                errs.append(e.invalid(name_path, res.name, "is an invalid extended resource name"))
            if res.name in managed:
                errs.append(e.invalid(name_path, res.name, "duplicate extender managed resource name"))
            managed.add(res.name)
    if binders > 1:
        errs.append(
            e.invalid(
                "extenders", f"found {binders} extenders implementing bind", "only one extender can implement bind"
            )
        )
    return errs
