"""Strategies of networking.k8s.io/v1: Ingresses and NetworkPolicies (upstream: pkg/registry/networking)."""

from __future__ import annotations

from ...api.meta import Object
from . import register
from .strategy import Strategy


@register("networking.k8s.io", "Ingress")
class IngressStrategy(Strategy):
    tracks_generation = True

    def initial_status(self, obj: Object) -> None:
        obj["status"] = {"loadBalancer": {}}


@register("networking.k8s.io", "NetworkPolicy")
class NetworkPolicyStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict) and not spec.get("policyTypes"):
            spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
