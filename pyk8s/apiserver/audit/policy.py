"""The audit policy (`--audit-policy-file`, audit.k8s.io/v1 Policy): which requests are recorded and at what
level (upstream: apiserver/pkg/audit/policy/{reader.go,checker.go}, pkg/apis/audit/validation).

The first rule that matches a request decides its level; no match is level None (not audited). Empty lists in
a rule match anything; a rule naming resources or namespaces matches only resource requests, one naming
nonResourceURLs only the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ...api import errors
from ...api.validation import is_dns1123_subdomain
from ..authz import Attributes

NONE, METADATA, REQUEST, REQUEST_RESPONSE = "None", "Metadata", "Request", "RequestResponse"
LEVELS = (NONE, METADATA, REQUEST, REQUEST_RESPONSE)
RANK = {level: i for i, level in enumerate(LEVELS)}
REQUEST_RECEIVED, RESPONSE_STARTED, RESPONSE_COMPLETE, PANIC = (
    "RequestReceived", "ResponseStarted", "ResponseComplete", "Panic",
)  # fmt: skip
STAGES = (REQUEST_RECEIVED, RESPONSE_STARTED, RESPONSE_COMPLETE, PANIC)
API_VERSION = "audit.k8s.io/v1"


class PolicyError(ValueError):
    """The policy file cannot be used (upstream's messages)."""


@dataclass(frozen=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    level: str
    users: frozenset[str] = frozenset()
    user_groups: frozenset[str] = frozenset()
    verbs: frozenset[str] = frozenset()
    resources: tuple[GroupResources, ...] = ()
    namespaces: frozenset[str] = frozenset()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool | None = None


@dataclass(frozen=True)
class RequestAuditConfig:
    """What the policy says of one request."""

    level: str
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


@dataclass
class Policy:
    rules: list[Rule] = field(default_factory=list)
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    def evaluate(self, a: Attributes) -> RequestAuditConfig:
        for rule in self.rules:
            if _matches(rule, a):
                omit = self.omit_managed_fields if rule.omit_managed_fields is None else rule.omit_managed_fields
                return RequestAuditConfig(rule.level, rule.omit_stages | self.omit_stages, omit)
        return RequestAuditConfig(NONE, self.omit_stages, self.omit_managed_fields)


def _matches(r: Rule, a: Attributes) -> bool:
    if r.users and a.user.name not in r.users:
        return False
    if r.user_groups and r.user_groups.isdisjoint(a.user.groups):
        return False
    if r.verbs and a.verb not in r.verbs:
        return False
    if r.namespaces or r.resources:
        return _matches_resource(r, a)
    if r.non_resource_urls:
        return not a.resource_request and any(_path_matches(a.path, spec) for spec in r.non_resource_urls)
    return True


def _path_matches(path: str, spec: str) -> bool:
    return spec == "*" or spec == path or (spec.endswith("*") and path.startswith(spec.rstrip("*")))


def _matches_resource(r: Rule, a: Attributes) -> bool:
    if not a.resource_request:
        return False
    if r.namespaces and a.namespace not in r.namespaces:  # "" stands for cluster-scoped
        return False
    if not r.resources:
        return True
    sub = a.subresource
    combined = f"{a.resource}/{sub}" if sub else a.resource
    for gr in r.resources:
        if gr.group != a.api_group:
            continue
        if not gr.resources:
            return True
        if gr.resource_names and a.name not in gr.resource_names:
            continue
        for res in gr.resources:
            if res == combined or res == "*":
                return True
            if sub and res.startswith("*/") and res[2:] == sub:
                return True
            if res.endswith("/*") and res[:-2] == a.resource:
                return True
    return False


# -- reading and validating ----------------------------------------------------------------------------------


def _strings(raw: Any, path: str, errs: list[errors.FieldError]) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        errs.append(errors.invalid(path, raw, "must be a list of strings"))
        return []
    return raw


def _stages(raw: Any, path: str, errs: list[errors.FieldError]) -> frozenset[str]:
    stages = _strings(raw, path, errs)
    for i, s in enumerate(stages):
        if s not in STAGES:
            errs.append(errors.invalid(f"{path}[{i}]", s, "allowed stages are " + ",".join(STAGES)))
    return frozenset(stages)


def _rule(raw: Any, path: str, errs: list[errors.FieldError]) -> Rule | None:
    if not isinstance(raw, dict):
        errs.append(errors.invalid(path, raw, "must be an object"))
        return None
    level = raw.get("level") or ""
    if not level:
        errs.append(errors.required(f"{path}.level", ""))
    elif level not in LEVELS:
        errs.append(errors.not_supported(f"{path}.level", level, list(LEVELS)))
    urls = _strings(raw.get("nonResourceURLs"), f"{path}.nonResourceURLs", errs)
    for i, url in enumerate(urls):
        if url == "*":
            continue
        if not url.startswith("/"):
            errs.append(errors.invalid(f"{path}.nonResourceURLs[{i}]", url,
                                       "non-resource URL rules must begin with a '/' character"))  # fmt: skip
        if url and "*" in url[:-1]:
            errs.append(errors.invalid(f"{path}.nonResourceURLs[{i}]", url,
                                       "non-resource URL wildcards '*' must be the final character of the rule"))  # fmt: skip
    groups: list[GroupResources] = []
    for gr in raw.get("resources") or []:
        if not isinstance(gr, dict):
            errs.append(errors.invalid(f"{path}.resources", gr, "must be an object"))
            continue
        group = gr.get("group") or ""
        problems = is_dns1123_subdomain(group) if group else []
        if problems:
            errs.append(errors.invalid(f"{path}.resources.group", group, ",".join(problems)))
        resources = _strings(gr.get("resources"), f"{path}.resources.resources", errs)
        names = _strings(gr.get("resourceNames"), f"{path}.resources.resourceNames", errs)
        if names and not resources:
            errs.append(errors.invalid(f"{path}.resources.resourceNames", names,
                                       "using resourceNames requires at least one resource"))  # fmt: skip
        groups.append(GroupResources(group, tuple(resources), tuple(names)))
    namespaces = _strings(raw.get("namespaces"), f"{path}.namespaces", errs)
    if urls and (groups or namespaces):
        errs.append(errors.invalid(f"{path}.nonResourceURLs", urls,
                                   "rules cannot apply to both regular resources and non-resource URLs"))  # fmt: skip
    omit_mf = raw.get("omitManagedFields")
    return Rule(
        level=level,
        users=frozenset(_strings(raw.get("users"), f"{path}.users", errs)),
        user_groups=frozenset(_strings(raw.get("userGroups"), f"{path}.userGroups", errs)),
        verbs=frozenset(_strings(raw.get("verbs"), f"{path}.verbs", errs)),
        resources=tuple(groups),
        namespaces=frozenset(namespaces),
        non_resource_urls=tuple(urls),
        omit_stages=_stages(raw.get("omitStages"), f"{path}.omitStages", errs),
        omit_managed_fields=omit_mf if isinstance(omit_mf, bool) else None,
    )


def parse_policy(text: str | bytes) -> Policy:
    """A Policy from YAML or JSON; PolicyError with upstream's wording when it is not a valid one."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise PolicyError(f"failed decoding: {err}") from None
    if not isinstance(doc, dict):
        raise PolicyError("failed decoding: Object 'Kind' is missing")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if kind != "Policy" or api_version != API_VERSION:
        group, _, version = str(api_version or "").rpartition("/")
        raise PolicyError(f"unknown group version field {group}/{version}, Kind={kind or ''} in policy")
    errs: list[errors.FieldError] = []
    rules = [_rule(r, f"rules[{i}]", errs) for i, r in enumerate(doc.get("rules") or [])]
    omit = _stages(doc.get("omitStages"), "omitStages", errs)
    if errs:
        raise PolicyError(errors.aggregate(str(e) for e in errs))
    if not rules:
        raise PolicyError("loaded illegal policy with 0 rules")
    return Policy([r for r in rules if r is not None], omit, doc.get("omitManagedFields") is True)


def load_policy(path: str | Path) -> Policy:
    try:
        text = Path(path).read_bytes()
    except OSError as err:
        raise PolicyError(f"failed to read file path {errors.go_quote(str(path))}: {err}") from None
    try:
        return parse_policy(text)
    except PolicyError as err:
        raise PolicyError(f"{err}: from file {path}") from None
