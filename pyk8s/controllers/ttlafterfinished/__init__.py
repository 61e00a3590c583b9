"""The TTL-after-finished controller (ttlafterfinished_controller.py)."""

from .ttlafterfinished_controller import TTLAfterFinishedController

__all__ = ["TTLAfterFinishedController"]
