"""The resource quota controller (`resourcequota-controller`)."""

from .resource_quota_controller import ResourceQuotaController

__all__ = ["ResourceQuotaController"]
