"""Container images on nodes as the scheduler sees them (upstream: framework.ImageStateSummary and the scheduler
cache's imageStates): per image name, its size and the nodes holding it; each NodeInfo carries the summaries of
its own images (`NodeInfo.image_states`), which ImageLocality reads.

A name's size is the one first seen for it, kept while any node holds the name (nodes in the order they arrive,
then images and names in node.status.images order); a node listing a name twice counts once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .interface import Node


@dataclass(slots=True)
class ImageStateSummary:
    size: int
    num_nodes: int


def _names(node: Node) -> Iterator[tuple[str, int]]:
    """(name, sizeBytes) of every name of every image in node.status.images, in order."""
    for image in (node.get("status") or {}).get("images") or ():
        size = int(image.get("sizeBytes") or 0)
        for name in image.get("names") or ():
            yield name, size


class ImageStates:
    """Every image name on the nodes added: its size and holders, kept as nodes come, change and go."""

    __slots__ = ("_holders", "_sizes")

    def __init__(self) -> None:
        self._sizes: dict[str, int] = {}
        self._holders: dict[str, set[str]] = {}

    def add_node(self, node: Node) -> None:
        node_name = node["metadata"]["name"]
        for name, size in _names(node):
            holders = self._holders.get(name)
            if holders is None:
                self._sizes[name] = size
                self._holders[name] = {node_name}
            else:
                holders.add(node_name)

    def remove_node(self, node: Node) -> None:
        """Forget `node` (the version that was added); a name no node holds any more is dropped with its size."""
        node_name = node["metadata"]["name"]
        for name, _ in _names(node):
            holders = self._holders.get(name)
            if holders is not None:
                holders.discard(node_name)
                if not holders:
                    del self._holders[name]
                    del self._sizes[name]

    def summaries(self, node: Node) -> dict[str, ImageStateSummary]:
        """The summaries of the (added) node's images by name, counting the holders as they are now."""
        out: dict[str, ImageStateSummary] = {}
        sizes, holders = self._sizes, self._holders
        # Loops rather than _names: the cache calls this for every node it copies into a cycle's snapshot.
        for image in (node.get("status") or {}).get("images") or ():
            for name in image.get("names") or ():
                if name not in out:
                    out[name] = ImageStateSummary(sizes[name], len(holders[name]))
        return out


def image_states_for(nodes: Iterable[Node]) -> dict[str, dict[str, ImageStateSummary]]:
    """Per node name, its image summaries among `nodes` (as a cache that was given these nodes in order)."""
    nodes = list(nodes)
    states = ImageStates()
    for node in nodes:
        states.add_node(node)
    return {node["metadata"]["name"]: states.summaries(node) for node in nodes}
