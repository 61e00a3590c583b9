"""The disruption controller (disruption.py): PodDisruptionBudgets' status."""

from .disruption import DisruptionController

__all__ = ["DisruptionController"]
