"""The PodTopologySpread plugin (upstream: pkg/scheduler/framework/plugins/podtopologyspread): spreads pods
over topology domains, filtering on DoNotSchedule constraints and scoring on ScheduleAnyway ones."""

from __future__ import annotations

from .common import NAME
from .filtering import ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH
from .plugin import PodTopologySpread

__all__ = ["ERR_REASON_CONSTRAINTS_NOT_MATCH", "ERR_REASON_NODE_LABEL_NOT_MATCH", "NAME", "PodTopologySpread"]
