"""The garbage collector: ownership graph (graph.py) and the collector's workers (garbagecollector.py)."""

from .garbagecollector import GarbageCollector, deletable_resources
from .graph import GraphBuilder

__all__ = ["GarbageCollector", "GraphBuilder", "deletable_resources"]
