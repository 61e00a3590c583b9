"""From the metrics' recommendation to the replica count the autoscaler sets (upstream: the normalize* and
stabilize* functions of pkg/controller/podautoscaler/horizontal.go, v1.32), as pure functions of the
recorded history and `now` (seconds), so that they can be tested without a clock.

Without `spec.behavior`: the recommendation is the highest of the last downscale-stabilization window's (5 min by
default), then limited to `max(2 * current, 4)` on the way up and clamped to [minReplicas, maxReplicas].

With `spec.behavior` (which the API server fills in: scaleUp 0 s, policies Pods 4 and Percent 100 per 15 s;
scaleDown the flag's window, Percent 100 per 15 s; selectPolicy Max): the recommendation is held between the
lowest of the scale-up window's recommendations and the highest of the scale-down window's, then each policy
bounds the change against the replicas at the start of its period (the current count less what was added, plus
what was removed, within the period), the `selectPolicy` choosing the bound allowing the most change (Max), the
least (Min), or none (Disabled); then [minReplicas, maxReplicas].

Each function returns the reason and message of the condition it decides, as upstream words them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)

Rules = Mapping[str, Any]  # an HPAScalingRules object: stabilizationWindowSeconds, selectPolicy, policies

DESIRED_WITHIN_RANGE = ("DesiredWithinRange", "the desired count is within the acceptable range")
SCALE_UP_LIMIT = ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
SCALE_DOWN_LIMIT = ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")
TOO_MANY_REPLICAS = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
TOO_FEW_REPLICAS = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
SCALE_UP_STABILIZED = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
)
SCALE_DOWN_STABILIZED = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
)


@dataclass
class Recommendation:
    """A recommendation the metrics made, before stabilization."""

    replicas: int
    timestamp: float


@dataclass
class ScaleEvent:
    """A change the autoscaler made (replicas added or removed, never negative); `outdated` ones, older than the
    longest policy period, are reused for new events."""

    replica_change: int
    timestamp: float
    outdated: bool = False


@dataclass(frozen=True)
class NormalizationArg:
    """What the behavior-driven normalization needs (upstream: NormalizationArg)."""

    key: str
    scale_up: Rules
    scale_down: Rules
    min_replicas: int
    max_replicas: int
    current_replicas: int
    desired_replicas: int


# -- without spec.behavior ---------------------------------------------------------------------------------


def stabilize_recommendation(recommendations: list[Recommendation], desired: int, window: float, now: float) -> int:
    """The highest recommendation of the last `window` seconds (this one included); this one is recorded in
    place of a sample older than the window, or added."""
    highest = desired
    old: int | None = None
    cutoff = now - window
    for i, rec in enumerate(recommendations):
        if rec.timestamp < cutoff:
            old = i
        elif rec.replicas > highest:
            highest = rec.replicas
    _record(recommendations, old, Recommendation(desired, now))
    return highest


def calculate_scale_up_limit(current_replicas: int) -> int:
    """Without behavior, one step grows at most to `max(2 * current, 4)`."""
    return int(max(SCALE_UP_LIMIT_FACTOR * current_replicas, SCALE_UP_LIMIT_MINIMUM))


def convert_desired_replicas_with_rules(
    current_replicas: int, desired_replicas: int, min_replicas: int, max_replicas: int
) -> tuple[int, str, str]:
    """The count within [min, min(max, scale-up limit)], and the ScalingLimited reason and message."""
    scale_up_limit = calculate_scale_up_limit(current_replicas)
    if max_replicas > scale_up_limit:
        maximum, limiting = scale_up_limit, SCALE_UP_LIMIT
    else:
        maximum, limiting = max_replicas, TOO_MANY_REPLICAS
    if desired_replicas < min_replicas:
        return min_replicas, *TOO_FEW_REPLICAS
    if desired_replicas > maximum:
        return maximum, *limiting
    return desired_replicas, *DESIRED_WITHIN_RANGE


# -- with spec.behavior ------------------------------------------------------------------------------------


def stabilize_recommendation_with_behaviors(
    recommendations: list[Recommendation], args: NormalizationArg, now: float
) -> tuple[int, str, str]:
    """The current count held within [lowest recommendation of the scale-up window, highest of the scale-down
    window] (both windows include this recommendation), and the AbleToScale reason and message should it differ
    from the recommendation. This recommendation is recorded in place of one older than both windows, or
    added."""
    up_cutoff = now - float(args.scale_up.get("stabilizationWindowSeconds") or 0)
    down_cutoff = now - float(args.scale_down.get("stabilizationWindowSeconds") or 0)
    up = down = args.desired_replicas
    old: int | None = None
    for i, rec in enumerate(recommendations):
        if rec.timestamp > up_cutoff:
            up = min(up, rec.replicas)
        if rec.timestamp > down_cutoff:
            down = max(down, rec.replicas)
        if rec.timestamp < up_cutoff and rec.timestamp < down_cutoff:
            old = i
    recommendation = args.current_replicas
    if recommendation < up:
        recommendation = up
    if recommendation > down:
        recommendation = down
    _record(recommendations, old, Recommendation(args.desired_replicas, now))
    if args.desired_replicas >= args.current_replicas:
        return recommendation, *SCALE_UP_STABILIZED
    return recommendation, *SCALE_DOWN_STABILIZED


def _record(recommendations: list[Recommendation], old: int | None, rec: Recommendation) -> None:
    if old is not None:
        recommendations[old] = rec
    else:
        recommendations.append(rec)


def get_replicas_change_per_period(period_seconds: float, events: Sequence[ScaleEvent], now: float) -> int:
    """Replicas changed by the events within the last `period_seconds`."""
    cutoff = now - period_seconds
    return sum(e.replica_change for e in events if e.timestamp > cutoff)


def _select(rules: Rules) -> str:
    return str(rules.get("selectPolicy") or "Max")


def calculate_scale_up_limit_with_scaling_rules(
    current_replicas: int, up_events: Sequence[ScaleEvent], down_events: Sequence[ScaleEvent], rules: Rules,
    now: float,
) -> int:  # fmt: skip
    """The most replicas the scale-up policies allow now."""
    select = _select(rules)
    if select == "Disabled":
        return current_replicas
    choose_min = select == "Min"  # growing, the least change is the smallest count
    result = INT32_MAX if choose_min else INT32_MIN
    for policy in rules.get("policies") or ():
        period = float(policy.get("periodSeconds") or 0)
        added = get_replicas_change_per_period(period, up_events, now)
        removed = get_replicas_change_per_period(period, down_events, now)
        start = current_replicas - added + removed
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposed = start + value
        elif policy.get("type") == "Percent":
            # Rounded up: a small percentage of a few replicas must still be able to add one.
            proposed = math.ceil(start * (1 + value / 100))
        else:
            continue
        result = min(result, proposed) if choose_min else max(result, proposed)
    return result


def calculate_scale_down_limit_with_behaviors(
    current_replicas: int, up_events: Sequence[ScaleEvent], down_events: Sequence[ScaleEvent], rules: Rules,
    now: float,
) -> int:  # fmt: skip
    """The fewest replicas the scale-down policies allow now."""
    select = _select(rules)
    if select == "Disabled":
        return current_replicas
    choose_max = select == "Min"  # shrinking, the least change is the largest count
    result = INT32_MIN if choose_max else INT32_MAX
    for policy in rules.get("policies") or ():
        period = float(policy.get("periodSeconds") or 0)
        added = get_replicas_change_per_period(period, up_events, now)
        removed = get_replicas_change_per_period(period, down_events, now)
        start = current_replicas - added + removed
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposed = start - value
        elif policy.get("type") == "Percent":
            proposed = int(start * (1 - value / 100))  # truncated toward zero, as Go's int32(float)
        else:
            continue
        result = max(result, proposed) if choose_max else min(result, proposed)
    return result


def convert_desired_replicas_with_behavior_rate(
    args: NormalizationArg, up_events: Sequence[ScaleEvent], down_events: Sequence[ScaleEvent], now: float
) -> tuple[int, str, str]:
    """The stabilized count bounded by the policies and [min, max], and the ScalingLimited reason and message
    (the stabilization window is not looked at here)."""
    if args.desired_replicas > args.current_replicas:
        limit = calculate_scale_up_limit_with_scaling_rules(
            args.current_replicas, up_events, down_events, args.scale_up, now
        )
        # Past the limit already (the events have not aged out): hold, never shrink, on the way up.
        limit = max(limit, args.current_replicas)
        if args.max_replicas > limit:
            maximum, limiting = limit, SCALE_UP_LIMIT
        else:
            maximum, limiting = args.max_replicas, TOO_MANY_REPLICAS
        if args.desired_replicas > maximum:
            return maximum, *limiting
    elif args.desired_replicas < args.current_replicas:
        limit = calculate_scale_down_limit_with_behaviors(
            args.current_replicas, up_events, down_events, args.scale_down, now
        )
        limit = min(limit, args.current_replicas)
        if args.min_replicas < limit:
            minimum, limiting = limit, SCALE_DOWN_LIMIT
        else:
            minimum, limiting = args.min_replicas, TOO_FEW_REPLICAS
        if args.desired_replicas < minimum:
            return minimum, *limiting
    return args.desired_replicas, *DESIRED_WITHIN_RANGE


def get_longest_policy_period(rules: Rules) -> int:
    return max((int(p.get("periodSeconds") or 0) for p in rules.get("policies") or ()), default=0)


def mark_scale_events_outdated(events: Sequence[ScaleEvent], longest_policy_period: float, now: float) -> None:
    cutoff = now - longest_policy_period
    for e in events:
        if e.timestamp < cutoff:
            e.outdated = True


def store_scale_event(
    behavior: Mapping[str, Any] | None, up_events: list[ScaleEvent], down_events: list[ScaleEvent],
    prev_replicas: int, new_replicas: int, now: float,
) -> None:  # fmt: skip
    """Remember a change for the policies (only with behavior, which alone reads them), reusing the slot of the
    last event older than the direction's longest policy period."""
    if behavior is None:
        return
    if new_replicas > prev_replicas:
        events, rules, change = up_events, behavior.get("scaleUp") or {}, new_replicas - prev_replicas
    else:
        events, rules, change = down_events, behavior.get("scaleDown") or {}, prev_replicas - new_replicas
    mark_scale_events_outdated(events, get_longest_policy_period(rules), now)
    old = next((i for i in reversed(range(len(events))) if events[i].outdated), None)
    event = ScaleEvent(change, now)
    if old is not None:
        events[old] = event
    else:
        events.append(event)
