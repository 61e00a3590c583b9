"""What every part of the aggregator needs to know about an APIService object: its defaults, its `Available`
condition, and the order of groups and versions it implies (upstream: kube-aggregator
pkg/apis/apiregistration/v1/helper/helpers.go, v1/defaults.go, and the constants of autoregister)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..api import meta
from ..api.meta import Object

GROUP = "apiregistration.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "APIService"
AVAILABLE = "Available"
LEGACY_NAME = "v1."  # the core group's APIService (`/api/v1`)
DEFAULT_SERVICE_PORT = 443

# autoregister's label: `onstart` objects are put in place once at start, `true` ones kept in step for ever.
AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged"
MANAGE_ON_START = "onstart"
MANAGE_CONTINUOUSLY = "true"

LOCAL_REASON = "Local"
LOCAL_MESSAGE = "Local APIServices are always available"


def set_defaults(obj: Object) -> None:
    """upstream SetDefaults_ServiceReference: a service reference without a port means 443."""
    service = (obj.get("spec") or {}).get("service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = DEFAULT_SERVICE_PORT


def spec_of(obj: Object) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def service_of(obj: Object) -> dict[str, Any] | None:
    """The service reference, None for a local APIService."""
    service = spec_of(obj).get("service")
    return service if isinstance(service, dict) else None


def service_port(service: dict[str, Any]) -> int:
    port = service.get("port")
    return port if isinstance(port, int) else DEFAULT_SERVICE_PORT


def name_of(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def group_version_of_name(name: str) -> tuple[str, str]:
    """(group, version) of an APIService name, `<version>.<group>` (upstream APIServiceNameToGroupVersion)."""
    version, _, group = name.partition(".")
    return group, version


def make(group: str, version: str, group_priority: int, version_priority: int, managed: str = "") -> Object:
    """A local APIService for `group`/`version`, labelled as autoregister manages it when `managed` is set."""
    md: dict[str, Any] = {"name": f"{version}.{group}"}
    if managed:
        md["labels"] = {AUTOMANAGED_LABEL: managed}
    spec: dict[str, Any] = {"group": group} if group else {}  # omitempty: the core group has none
    spec |= {"version": version, "groupPriorityMinimum": group_priority, "versionPriority": version_priority}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": md, "spec": spec}


# -- conditions --------------------------------------------------------------------------------------------


def conditions_of(obj: Object) -> list[dict[str, Any]]:
    status = obj.get("status")
    conds = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in conds if isinstance(c, dict)] if isinstance(conds, list) else []


def condition(obj: Object, type_: str = AVAILABLE) -> dict[str, Any] | None:
    for c in conditions_of(obj):
        if c.get("type") == type_:
            return c
    return None


def is_available(obj: Object) -> bool:
    """Whether the Available condition is present and True (upstream IsAPIServiceConditionTrue)."""
    c = condition(obj)
    return c is not None and c.get("status") == "True"


def new_condition(status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": AVAILABLE, "status": status, "lastTransitionTime": meta.rfc3339(), "reason": reason,
            "message": message}  # fmt: skip


def local_available_condition() -> dict[str, Any]:
    return new_condition("True", LOCAL_REASON, LOCAL_MESSAGE)


def set_condition(obj: Object, new: dict[str, Any]) -> None:
    """Put `new` in place of the condition of its type (upstream SetAPIServiceCondition): the transition time
    moves only when the status does."""
    existing = condition(obj, new["type"])
    if existing is None:
        status = obj.get("status")
        if not isinstance(status, dict):
            status = obj["status"] = {}
        status["conditions"] = [*conditions_of(obj), dict(new)]
        return
    if existing.get("status") != new["status"]:
        existing["status"] = new["status"]
        existing["lastTransitionTime"] = new["lastTransitionTime"]
    existing["reason"] = new.get("reason", "")
    existing["message"] = new.get("message", "")
    for key in ("reason", "message"):
        if not existing[key]:
            del existing[key]  # omitempty


# -- ordering ----------------------------------------------------------------------------------------------


def _priority(obj: Object, field: str) -> int:
    value = spec_of(obj).get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def sorted_by_group_and_version(apiservices: Iterable[Object]) -> list[list[Object]]:
    """The APIServices grouped by group, groups in order of their first member after sorting by
    groupPriorityMinimum (highest first) then name, each group's members by versionPriority (highest first)
    then Kubernetes' version order (upstream SortedByGroupAndVersion)."""
    # Imported here: apiextensions imports the registry, which imports this module.
    from ..apiextensions.customresource_handler import version_order

    by_priority = sorted(apiservices, key=lambda s: (-_priority(s, "groupPriorityMinimum"), name_of(s)))
    groups: dict[str, list[Object]] = {}
    for s in by_priority:
        groups.setdefault(str(spec_of(s).get("group", "")), []).append(s)

    def in_group(s: Object) -> tuple[int, tuple[int, int, int, str]]:
        return -_priority(s, "versionPriority"), version_order(str(spec_of(s).get("version", "")))

    return [sorted(members, key=in_group) for members in groups.values()]
