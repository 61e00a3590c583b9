"""DefaultTolerationSeconds (upstream plugin/pkg/admission/defaulttolerationseconds): every pod that does not
already tolerate `node.kubernetes.io/not-ready:NoExecute` and `node.kubernetes.io/unreachable:NoExecute` gets a
toleration for each, for `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`
(300 s by default), so that the taint-eviction controller moves its pods off a failed node after five minutes.
"""

from __future__ import annotations

from typing import Any

from ...api import errors
from . import CREATE, UPDATE, Attributes

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_SECONDS = 300


def _covers(toleration: Any, key: str) -> bool:
    """Upstream's test: an empty key or effect counts as covering (it does not look at operator or value)."""
    if not isinstance(toleration, dict):
        return False
    return (toleration.get("key") or "") in ("", key) and (toleration.get("effect") or "") in ("", "NoExecute")


class DefaultTolerationSeconds:
    name = "DefaultTolerationSeconds"

    def __init__(self, not_ready_seconds: int = DEFAULT_SECONDS, unreachable_seconds: int = DEFAULT_SECONDS) -> None:
        self.seconds = {NOT_READY: not_ready_seconds, UNREACHABLE: unreachable_seconds}

    async def admit(self, a: Attributes) -> None:
        if a.operation not in (CREATE, UPDATE) or a.subresource:
            return
        if a.resource.group != "" or a.resource.plural != "pods" or a.object is None:
            return
        spec = a.object.get("spec")
        if not isinstance(spec, dict):
            raise errors.bad_request(f"expected *api.Pod but got {type(spec).__name__}")
        tolerations = spec.get("tolerations")
        if not isinstance(tolerations, list):
            tolerations = spec["tolerations"] = []
        for key, seconds in self.seconds.items():
            if not any(_covers(t, key) for t in tolerations):
                tolerations.append(
                    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
                )

    async def validate(self, a: Attributes) -> None:
        return None
