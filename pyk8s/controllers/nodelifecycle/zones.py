"""Zone states and the eviction rate each one gets (upstream: ComputeZoneState, ReducedQPSFunc, HealthyQPSFunc and
handleDisruption's rules in node_lifecycle_controller.go).

A zone is FullDisruption when none of its nodes is Ready, PartialDisruption when more than two are not Ready and
they are at least `unhealthy_zone_threshold` of it, Normal otherwise. Normal zones taint at `--node-eviction-rate`;
partially disrupted ones at `--secondary-node-eviction-rate` if the zone is larger than
`--large-cluster-size-threshold`, else not at all; a fully disrupted zone at the normal rate — unless every zone
is fully disrupted, when the controller assumes its own view is what is broken and stops tainting altogether.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


def float32(x: float) -> float:
    """`x` rounded to a float32, as upstream compares the unhealthy fraction (float32) with its threshold."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


class ZoneState(enum.StrEnum):
    INITIAL = "Initial"
    NORMAL = "Normal"
    FULL_DISRUPTION = "FullDisruption"
    PARTIAL_DISRUPTION = "PartialDisruption"


@dataclass(frozen=True)
class EvictionRates:
    eviction_rate: float = 0.1  # --node-eviction-rate
    secondary_eviction_rate: float = 0.01  # --secondary-node-eviction-rate
    large_cluster_threshold: int = 50  # --large-cluster-size-threshold
    unhealthy_zone_threshold: float = 0.55  # --unhealthy-zone-threshold

    def healthy_qps(self, zone_size: int) -> float:
        return self.eviction_rate

    def reduced_qps(self, zone_size: int) -> float:
        return self.secondary_eviction_rate if zone_size > self.large_cluster_threshold else 0.0

    def qps_for(self, state: ZoneState, zone_size: int) -> float | None:
        """The limiter a zone in `state` gets (None: leave it as it is, for Initial)."""
        if state == ZoneState.NORMAL:
            return self.eviction_rate
        if state == ZoneState.PARTIAL_DISRUPTION:
            return self.reduced_qps(zone_size)
        if state == ZoneState.FULL_DISRUPTION:
            return self.healthy_qps(zone_size)
        return None

    def compute_zone_state(self, ready_conditions: Iterable[Mapping[str, Any] | None]) -> tuple[int, ZoneState]:
        """(not-ready count, state) of a zone from its nodes' Ready conditions (None: the node has none)."""
        ready = not_ready = 0
        for c in ready_conditions:
            if c is not None and c.get("status") == "True":
                ready += 1
            else:
                not_ready += 1
        if ready == 0 and not_ready > 0:
            return not_ready, ZoneState.FULL_DISRUPTION
        if not_ready > 2 and float32(not_ready / (not_ready + ready)) >= float32(self.unhealthy_zone_threshold):
            return not_ready, ZoneState.PARTIAL_DISRUPTION
        return not_ready, ZoneState.NORMAL
