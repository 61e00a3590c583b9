"""The ResourceQuota plugin's configuration (upstream: plugin/pkg/admission/resourcequota/apis/resourcequota and
its LoadConfiguration and validation; apiserver's resourcequota CheckRequest reads it).

`limitedResources` lists what may only be consumed under a covering quota: for a resource (`apiGroup`,
`resource`), any usage whose name contains one of `matchContains` (a pod's `requests.cpu` for `cpu`), and, for
pods, the `matchScopes` (a PriorityClass, say) that some quota of the namespace must name. Written as
apiserver.config.k8s.io/v1 ResourceQuotaConfiguration, or resourcequota.admission.k8s.io v1beta1 / v1alpha1
Configuration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ....api import errors
from ....api.quantity import Quantity
from ..config import ConfigError, check_kind
from .evaluators import Evaluator, ScopeSelector, matching_scopes

KINDS = {
    "apiserver.config.k8s.io/v1": "ResourceQuotaConfiguration",
    "resourcequota.admission.k8s.io/v1beta1": "Configuration",
    "resourcequota.admission.k8s.io/v1alpha1": "Configuration",
}


@dataclass(frozen=True)
class LimitedResource:
    api_group: str
    resource: str
    match_contains: tuple[str, ...] = ()
    match_scopes: tuple[ScopeSelector, ...] = ()


@dataclass(frozen=True)
class ResourceQuotaConfiguration:
    limited_resources: tuple[LimitedResource, ...] = ()


def _scope(req: Any, where: str) -> ScopeSelector:
    if not isinstance(req, dict):
        raise ConfigError(f"json: cannot unmarshal {type(req).__name__} into Go struct field {where}")
    return ScopeSelector(str(req.get("scopeName") or ""), str(req.get("operator") or ""),
                         tuple(str(v) for v in req.get("values") or ()))  # fmt: skip


def load_resource_quota_configuration(doc: dict[str, Any]) -> ResourceQuotaConfiguration:
    """The plugin's configuration from its document; a ConfigError when it is not one or is invalid (upstream
    reports both when the plugin is made)."""
    check_kind(doc, KINDS)
    items = doc.get("limitedResources") or []
    if not isinstance(items, list):
        raise ConfigError("json: cannot unmarshal into Go struct field Configuration.limitedResources")
    out: list[LimitedResource] = []
    problems: list[errors.FieldError] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConfigError(f"json: cannot unmarshal {type(item).__name__} into Go struct field limitedResources")
        resource = str(item.get("resource") or "")
        if not resource:
            problems.append(errors.required(f"limitedResources[{i}].apiGroupResource"))
        scopes = tuple(_scope(s, "LimitedResource.matchScopes") for s in item.get("matchScopes") or ())
        out.append(LimitedResource(str(item.get("apiGroup") or ""), resource,
                                   tuple(str(c) for c in item.get("matchContains") or ()), scopes))  # fmt: skip
    if problems:
        raise ConfigError(errors.aggregate(str(p) for p in problems))
    return ResourceQuotaConfiguration(tuple(out))


def limited_by_default(usage: Mapping[str, Quantity], limited: Iterable[LimitedResource]) -> list[str]:
    """The consumed resource names a covering quota must hold (upstream limitedByDefault)."""
    out = []
    for lr in limited:
        for name, value in usage.items():
            if value.sign == 1 and any(c in name for c in lr.match_contains):
                out.append(name)
    return out


def limited_scopes(evaluator: Evaluator, obj: Any, limited: Iterable[LimitedResource]) -> list[ScopeSelector]:
    """The configured scopes the object falls in (upstream getMatchedLimitedScopes)."""
    out: list[ScopeSelector] = []
    for lr in limited:
        out += matching_scopes(evaluator, obj, list(lr.match_scopes))
    return out


def uncovered_scopes(limited: list[ScopeSelector], covered: list[ScopeSelector]) -> list[ScopeSelector]:
    """The limited scopes no matching quota names (upstream's pod evaluator UncoveredQuotaScopes: by scope
    name; the other evaluators match no scope, so nothing is left for them)."""
    names = {s.scope_name for s in covered}
    return [s for s in limited if s.scope_name not in names]


def go_scopes(scopes: list[ScopeSelector]) -> str:
    """Scope requirements as Go's %v prints the slice: `[{PriorityClass In [high]}]`."""
    return "[" + " ".join(f"{{{s.scope_name} {s.operator} [{' '.join(s.values)}]}}" for s in scopes) + "]"
