"""ResourceQuota: what a namespace may consume, charged at admission (`admission`) with the usage rules of
`evaluators` and the arithmetic of `resources`; the resource quota controller (pyk8s.controllers.resourcequota)
recomputes the totals."""

from __future__ import annotations

from .admission import ResourceQuota

__all__ = ["ResourceQuota"]
