"""The InterPodAffinity scheduler plugin (upstream: pkg/scheduler/framework/plugins/interpodaffinity): required
pod (anti-)affinity as a filter, preferred pod (anti-)affinity and the symmetric terms of existing pods as a score.
"""

from __future__ import annotations

from .common import NAME
from .filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PreFilterState,
)
from .plugin import (
    DEFAULT_HARD_POD_AFFINITY_WEIGHT,
    InterPodAffinity,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_change,
)
from .scoring import PRE_SCORE_STATE_KEY, PreScoreState

__all__ = [
    "DEFAULT_HARD_POD_AFFINITY_WEIGHT",
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "InterPodAffinity",
    "PreFilterState",
    "PreScoreState",
    "is_schedulable_after_node_change",
    "is_schedulable_after_pod_change",
]
