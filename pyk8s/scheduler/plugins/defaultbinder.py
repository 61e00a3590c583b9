"""The DefaultBinder Bind plugin (upstream: plugins/defaultbinder/default_binder.go): binds the pod by POSTing a
Binding to the pod's binding subresource; any API error fails the binding cycle with an Error status.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..framework.interface import BindPlugin, CycleState, Pod, Status


class DefaultBinder(BindPlugin):
    name: ClassVar[str] = "DefaultBinder"

    def __init__(self, handle: Any = None) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> DefaultBinder:
        return cls(handle)

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        md = pod["metadata"]
        namespace, name = md.get("namespace", ""), md.get("name", "")
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": md.get("uid", "")},
            "target": {"kind": "Node", "name": node_name},
        }
        try:
            await self.handle.client.create("pods", binding, namespace, name=name, subresource="binding")
        except Exception as err:  # the API's errors and transport failures alike fail this binding cycle
            return Status.as_error(err)
        return None
