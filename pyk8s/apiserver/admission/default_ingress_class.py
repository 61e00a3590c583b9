"""DefaultIngressClass (upstream: plugin/pkg/admission/network/defaultingressclass/admission.go): a new Ingress
that names no class (neither `spec.ingressClassName` nor the `kubernetes.io/ingress.class` annotation) gets the
IngressClass annotated `ingressclass.kubernetes.io/is-default-class: "true"`; with several, the newest, ties
broken by name."""

from __future__ import annotations

from collections.abc import Callable

from ...api.meta import Object
from . import CREATE, Attributes

INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
IS_DEFAULT_INGRESS_CLASS = "ingressclass.kubernetes.io/is-default-class"


def default_ingress_class(classes: list[Object]) -> Object | None:
    defaults = [c for c in classes
                if ((c.get("metadata") or {}).get("annotations") or {}).get(IS_DEFAULT_INGRESS_CLASS) == "true"]  # fmt: skip
    if not defaults:
        return None
    # RFC 3339 timestamps at one-second precision sort as strings; the newest first, then the lowest name.
    defaults.sort(key=lambda c: c["metadata"].get("name", ""))
    defaults.sort(key=lambda c: c["metadata"].get("creationTimestamp", ""), reverse=True)
    return defaults[0]


class DefaultIngressClass:
    name = "DefaultIngressClass"

    def __init__(self, list_classes: Callable[[], list[Object]]) -> None:
        self.list_classes = list_classes

    async def admit(self, a: Attributes) -> None:
        if a.operation != CREATE or a.subresource or a.object is None:
            return
        if a.resource.group != "networking.k8s.io" or a.resource.plural != "ingresses":
            return
        spec = a.object.setdefault("spec", {})
        if not isinstance(spec, dict) or spec.get("ingressClassName") is not None:
            return
        if INGRESS_CLASS_ANNOTATION in ((a.object.get("metadata") or {}).get("annotations") or {}):
            return
        found = default_ingress_class(self.list_classes())
        if found is not None:
            spec["ingressClassName"] = found["metadata"]["name"]

    async def validate(self, a: Attributes) -> None:
        return None
