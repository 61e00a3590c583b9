"""Defaulting of a CustomResourceDefinition as apiextensions.k8s.io/v1 does it on decode (upstream:
apiextensions-apiserver pkg/apis/apiextensions/v1/defaults.go and its generated zz_generated.defaults.go)."""

from __future__ import annotations

from typing import Any

NONE_CONVERTER = "None"
DEFAULT_SERVICE_PORT = 443


def set_defaults(crd: dict[str, Any]) -> None:
    """Fill in the v1 defaults in place: the singular and list kind names, the None conversion strategy, port
    443 for a conversion webhook's service, and a first stored version when the status lists none.

    `served` and `storage` have no defaults: they are required booleans in v1.
    """
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    _default_spec(spec)
    status = crd.get("status")
    stored = status.get("storedVersions") if isinstance(status, dict) else None
    if not stored:
        storage = next(
            (v.get("name", "") for v in spec.get("versions") or () if isinstance(v, dict) and v.get("storage") is True),
            None,
        )
        if storage is not None:
            if not isinstance(status, dict):
                status = crd["status"] = {}
            status["storedVersions"] = [storage]
    # The generated defaulter runs the spec defaults a second time, then the service reference's.
    service = (((spec.get("conversion") or {}).get("webhook") or {}).get("clientConfig") or {}).get("service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = DEFAULT_SERVICE_PORT


def _default_spec(spec: dict[str, Any]) -> None:
    names = spec.get("names")
    if not isinstance(names, dict):
        names = spec["names"] = {}
    kind = names.get("kind") if isinstance(names.get("kind"), str) else ""
    if not names.get("singular") and kind:  # lower("") would leave it empty (omitted) anyway
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": NONE_CONVERTER}
