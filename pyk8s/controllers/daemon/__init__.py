"""The DaemonSet controller (daemon_controller.py)."""

from .daemon_controller import DaemonSetsController

__all__ = ["DaemonSetsController"]
