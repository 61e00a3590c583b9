"""The StatefulSet controller (stateful_set.py)."""

from .stateful_set import StatefulSetController

__all__ = ["StatefulSetController"]
