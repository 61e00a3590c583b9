"""The PersistentVolume binder controller (pv_controller.py)."""

from .pv_controller import PersistentVolumeController

__all__ = ["PersistentVolumeController"]
