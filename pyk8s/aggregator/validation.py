"""Validation of APIService objects, with upstream's rules and messages (upstream: kube-aggregator
pkg/apis/apiregistration/validation/validation.go). ObjectMeta is checked by the registry before these run;
the name rule that depends on the spec (`<version>.<group>`) is here."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ..api import errors as e
from ..api import validation as v
from ..api.errors import FieldError
from ..api.meta import Object
from .apiservice import spec_of

CONDITION_STATUSES = ("True", "False", "Unknown")
PORT_RANGE_ERROR = "must be between 1 and 65535, inclusive"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _bundle_size(ca_bundle: Any) -> int:
    """How many bytes `caBundle` holds (it is base64 in JSON)."""
    if not isinstance(ca_bundle, str) or not ca_bundle:
        return 0
    try:
        return len(base64.b64decode(ca_bundle, validate=True))
    except (binascii.Error, ValueError):
        return len(ca_bundle)


def validate_name(obj: Object) -> list[FieldError]:
    """The name must be the spec's `<version>.<group>`, once it is a valid path segment (checked with
    ObjectMeta)."""
    spec = spec_of(obj)
    name = (obj.get("metadata") or {}).get("name") or ""
    required = f"{spec.get('version') or ''}.{spec.get('group') or ''}"
    if not name or v.is_valid_path_segment_name(name) or name == required:
        return []
    return [e.invalid("metadata.name", name, f'must be `spec.version+"."+spec.group`: {e.go_quote(required)}')]


def validate_apiservice(obj: Object) -> list[FieldError]:
    """upstream ValidateAPIService, without the ObjectMeta part."""
    spec = spec_of(obj)
    errs = validate_name(obj)
    group = spec.get("group") or ""
    version = spec.get("version") or ""
    if not group and version != "v1":
        errs.append(e.required("spec.group", "only v1 may have an empty group and it better be legacy kube"))
    if group:
        errs += [e.invalid("spec.group", group, m) for m in v.is_dns1123_subdomain(group)]
    errs += [e.invalid("spec.version", version, m) for m in v.is_dns1035_label(version)]

    group_priority = _int(spec.get("groupPriorityMinimum"))
    if group_priority <= 0 or group_priority > 20000:
        errs.append(e.invalid("spec.groupPriorityMinimum", group_priority, "must be positive and less than 20000"))
    version_priority = _int(spec.get("versionPriority"))
    if version_priority <= 0 or version_priority > 1000:
        errs.append(e.invalid("spec.versionPriority", version_priority, "must be positive and less than 1000"))

    service = spec.get("service")
    insecure = spec.get("insecureSkipTLSVerify") is True
    bundle = _bundle_size(spec.get("caBundle"))
    if not isinstance(service, dict):
        if bundle:
            errs.append(e.invalid("spec.caBundle", f"{bundle} bytes", "local APIServices may not have a caBundle"))
        if insecure:
            errs.append(
                e.invalid("spec.insecureSkipTLSVerify", True, "local APIServices may not have insecureSkipTLSVerify")
            )
        return errs

    if not service.get("namespace"):
        errs.append(e.required("spec.service.namespace"))
    if not service.get("name"):
        errs.append(e.required("spec.service.name"))
    port = _int(service.get("port"))
    if not 1 <= port <= 65535:
        errs.append(e.invalid("spec.service.port", port, "port is not valid: " + PORT_RANGE_ERROR))
    if insecure and bundle:
        errs.append(e.invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
    return errs


def validate_status(obj: Object) -> list[FieldError]:
    """upstream ValidateAPIServiceStatus: every condition's status is True, False or Unknown."""
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    errs: list[FieldError] = []
    for i, cond in enumerate(conditions if isinstance(conditions, list) else []):
        value = cond.get("status") if isinstance(cond, dict) else None
        if value not in CONDITION_STATUSES:
            errs.append(e.not_supported(f"status.conditions[{i}].status", value or "", CONDITION_STATUSES))
    return errs
