"""TaintNodesByCondition (upstream plugin/pkg/admission/nodetaint): a Node is created with the
`node.kubernetes.io/not-ready:NoSchedule` taint, so nothing is scheduled to it before the node lifecycle
controller has seen it Ready (the controller then takes the taint away).

Upstream's own integration tests of the scheduler turn it off (`--disable-admission-plugins`), as they create
bare Nodes with no controller manager; `pyk8s.testing.cluster.APIServerProcess` does the same.
"""

from __future__ import annotations

from . import CREATE, Attributes

NOT_READY_NO_SCHEDULE = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


class TaintNodesByCondition:
    name = "TaintNodesByCondition"

    async def admit(self, a: Attributes) -> None:
        if a.operation != CREATE or a.subresource or a.resource.group != "" or a.resource.plural != "nodes":
            return
        if a.object is None:
            return
        spec = a.object.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        taints = spec.get("taints")
        if not isinstance(taints, list):
            taints = spec["taints"] = []
        for t in taints:
            if isinstance(t, dict) and t.get("key") == NOT_READY_NO_SCHEDULE["key"] and t.get("effect") == "NoSchedule":
                return
        taints.append(dict(NOT_READY_NO_SCHEDULE))

    async def validate(self, a: Attributes) -> None:
        return None
