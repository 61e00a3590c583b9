"""The horizontal pod autoscaler controller (upstream: pkg/controller/podautoscaler/horizontal.go, v1.32;
`horizontal-pod-autoscaler-controller`): sets the replicas of each HorizontalPodAutoscaler's target through its
`scale` subresource from the target's pods' metrics.

Every autoscaler is synced once per sync period (15 s by default): its key always goes back on the queue that
long after a sync, and adds and updates only queue it for then, as upstream's fixed-interval rate limiter does.
A sync reads the target's Scale; with none it reports FailedGetScale. A target scaled to zero while minReplicas
is not zero is left alone (ScalingDisabled); one outside [minReplicas, maxReplicas] is brought inside. Otherwise
each metric proposes a count (metric_proposals.py, replica_calculator.py), the highest wins, and it is stabilized
and limited (normalization.py) before the Scale is written and a SuccessfulRescale event recorded. The status
(currentReplicas, desiredReplicas, currentMetrics, lastScaleTime) and the conditions AbleToScale, ScalingActive
and ScalingLimited are written through `status` when they changed. Recommendations and scale events live in
memory, as upstream keeps them, and go when the autoscaler does.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from ...api import errors
from ...api.meta import json_copy, parse_group_version, rfc3339
from ...api.resources import TABLE, Resource
from ...api.selectors import LabelSelector, SelectorError, parse_label_selector
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key
from ...client.events import EventBroadcaster
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..workers import queue_workers, run_workers
from . import normalization as norm
from .hpa_selectors import HPASelectors
from .metric_proposals import Condition, MetricFailure, MetricProposer, Proposal
from .metrics import MetricsClient, RESTMetricsClient
from .replica_calculator import Pod, ReplicaCalculator

log = logging.getLogger(__name__)

HPAS = "horizontalpodautoscalers.autoscaling"
COMPONENT = "horizontal-pod-autoscaler"
Object = Mapping[str, Any]


class FixedItemIntervalRateLimiter:
    """Every item waits the same interval (upstream: NewDefaultHPARateLimiter): the sync period."""

    def __init__(self, interval: float) -> None:
        self.interval = interval

    def when(self, item: Hashable) -> float:
        return self.interval

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 1


class ReconcileError(Exception):
    """A sync that did not finish; logged, and the autoscaler is synced again next period."""


def _semantic(status: Mapping[str, Any] | None) -> dict[str, Any]:
    """A status as equality sees it: unset, null, empty and (for currentReplicas) zero are all the same, as
    upstream's semantic equality and its types' omitempty make them."""
    out = {k: v for k, v in (status or {}).items() if v not in (None, [], {})}
    if out.get("currentReplicas") == 0:
        del out["currentReplicas"]
    return out


class HorizontalController:
    def __init__(
        self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5, sync_period: float = 15.0,
        downscale_stabilization: float = 300.0, tolerance: float = 0.1, cpu_initialization_period: float = 300.0,
        delay_of_initial_readiness_status: float = 30.0, metrics_client: MetricsClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:  # fmt: skip
        self.client = client
        self.workers = workers
        self.sync_period = sync_period
        self.downscale_stabilization = downscale_stabilization
        self.clock = clock
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            FixedItemIntervalRateLimiter(sync_period), name="horizontalpodautoscaler"
        )
        self.broadcaster = EventBroadcaster(client)
        self.recorder = self.broadcaster.new_core_recorder(COMPONENT)
        self.hpas = factory.informer_for(HPAS)
        self.pods = factory.informer_for("pods")
        self.hpas.add_event_handler(
            on_add=lambda h, _initial: self.enqueue(h),
            on_update=lambda _old, h: self.enqueue(h),
            on_delete=self._delete,
        )
        self.replica_calc = ReplicaCalculator(
            metrics_client or RESTMetricsClient(client), self.list_pods, tolerance=tolerance,
            cpu_initialization_period=cpu_initialization_period,
            delay_of_initial_readiness_status=delay_of_initial_readiness_status, clock=clock,
        )  # fmt: skip
        self.proposer = MetricProposer(self.replica_calc)
        self.selectors = HPASelectors()
        # Per autoscaler key: recommendations before stabilization, and the changes made (for the policies).
        self.recommendations: dict[str, list[norm.Recommendation]] = {}
        self.scale_up_events: dict[str, list[norm.ScaleEvent]] = {}
        self.scale_down_events: dict[str, list[norm.ScaleEvent]] = {}

    async def run(self) -> None:
        await asyncio.gather(self.hpas.wait_for_sync(), self.pods.wait_for_sync())
        tasks = queue_workers(self.queue, self.sync, "sync horizontal pod autoscaler", self.workers)
        await run_workers(tasks, [self.queue], self.broadcaster)

    # -- queue ------------------------------------------------------------------------------------------

    def enqueue(self, hpa: Object) -> None:
        """Queue for the next period (a queued key is not queued twice), and register its selector."""
        key = meta_namespace_key(hpa)
        self.queue.add_rate_limited(key)
        self.selectors.register(key)

    def _delete(self, obj: Object) -> None:
        key = meta_namespace_key(deleted_object(obj))
        self.queue.forget(key)
        self.selectors.forget(key)

    async def sync(self, key: str) -> None:
        deleted = False
        try:
            deleted = await self.reconcile_key(key)
        except ReconcileError as e:
            log.warning("horizontal pod autoscaler %s: %s", key, e)
        finally:
            # Synced again a period later whatever happened; a key already waiting keeps its turn.
            if not deleted:
                self.queue.add_rate_limited(key)

    def list_pods(self, namespace: str, selector: LabelSelector) -> list[Pod]:
        return [
            p for p in self.pods.indexer.by_index("namespace", namespace)
            if selector.matches((p.get("metadata") or {}).get("labels") or {})
        ]  # fmt: skip

    async def reconcile_key(self, key: str) -> bool:
        """Sync one autoscaler; True when it is gone (its memory is dropped)."""
        hpa = self.hpas.indexer.get_by_key(key)
        if hpa is None:
            log.info("horizontal pod autoscaler %s has been deleted", key)
            self.recommendations.pop(key, None)
            self.scale_up_events.pop(key, None)
            self.scale_down_events.pop(key, None)
            return True
        await self.reconcile_autoscaler(hpa, key)
        return False

    # -- conditions and status ---------------------------------------------------------------------------

    def set_condition(self, hpa: dict[str, Any], type_: str, status: str, reason: str, message: str) -> None:
        """Set a condition, added at the end if new; its transition time changes only with its status."""
        status_obj = hpa.get("status")
        if not isinstance(status_obj, dict):
            status_obj = hpa["status"] = {}
        conditions: list[dict[str, Any]] = status_obj.get("conditions") or []
        status_obj["conditions"] = conditions
        existing = next((c for c in conditions if c.get("type") == type_), None)
        if existing is None:
            existing = {"type": type_}
            conditions.append(existing)
        if existing.get("status") != status:
            existing["lastTransitionTime"] = rfc3339_at(self.clock())
        existing.update(status=status, reason=reason, message=message)

    def _apply(self, hpa: dict[str, Any], condition: Condition) -> None:
        self.set_condition(hpa, *condition)

    def set_status(self, hpa: dict[str, Any], current: int, desired: int, metrics: list[dict[str, Any]] | None,
                   rescale: bool) -> None:  # fmt: skip
        """Rebuild the status from the counts and metrics, keeping lastScaleTime (now, on a rescale) and the
        conditions."""
        old = hpa.get("status") or {}
        status: dict[str, Any] = {"currentReplicas": current, "desiredReplicas": desired, "currentMetrics": metrics}
        if old.get("lastScaleTime"):
            status["lastScaleTime"] = old["lastScaleTime"]
        if rescale:
            status["lastScaleTime"] = rfc3339_at(self.clock())
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        hpa["status"] = status

    def _set_current(self, hpa: dict[str, Any], current: int, metrics: list[dict[str, Any]] | None) -> None:
        """The current count and metrics with the last desired count (upstream: setCurrentReplicasAndMetricsInStatus)."""
        self.set_status(hpa, current, int((hpa.get("status") or {}).get("desiredReplicas") or 0), metrics, False)

    async def update_status_if_needed(self, original: Mapping[str, Any] | None, hpa: dict[str, Any]) -> None:
        if _semantic(original) == _semantic(hpa.get("status")):
            return
        md = hpa.get("metadata") or {}
        try:
            await self.client.update_status(HPAS, hpa, md.get("namespace"))
        except (errors.StatusError, ConnectionError) as e:
            self.recorder.event(hpa, "Warning", "FailedUpdateStatus", str(e))
            raise ReconcileError(f"failed to update status for {md.get('name', '')}: {e}") from None

    async def _write_quietly(self, original: Mapping[str, Any] | None, hpa: dict[str, Any]) -> None:
        """Write what the status says so far on the way out of a failed sync; a failure of that write is only
        logged, the sync's own error being the one reported."""
        try:
            await self.update_status_if_needed(original, hpa)
        except ReconcileError as e:
            log.warning("horizontal pod autoscaler %s: %s", meta_namespace_key(hpa), e)

    async def _fail(self, original: Mapping[str, Any] | None, hpa: dict[str, Any], message: str) -> ReconcileError:
        await self._write_quietly(original, hpa)
        return ReconcileError(message)

    # -- the target's scale ------------------------------------------------------------------------------

    async def _get_scale(self, hpa: dict[str, Any], original: Mapping[str, Any] | None,
                         reference: str) -> tuple[dict[str, Any], Resource]:  # fmt: skip
        """The target's Scale and the resource it was read through; on failure FailedGetScale is reported."""
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        namespace = str(hpa["metadata"].get("namespace") or "")

        async def failed(err: object, message: str) -> ReconcileError:
            self.recorder.event(hpa, "Warning", "FailedGetScale", str(err))
            self.set_condition(hpa, "AbleToScale", "False", "FailedGetScale",
                               f"the HPA controller was unable to get the target's current scale: {err}")  # fmt: skip
            return await self._fail(original, hpa, message)

        try:
            group, _ = parse_group_version(str(ref.get("apiVersion") or ""))
        except ValueError as e:
            raise await failed(e, f"invalid API version in scale target reference: {e}") from None
        kind = str(ref.get("kind") or "")
        # Every version of the kind in its group, preferred first (upstream: RESTMapper.RESTMappings).
        mappings = [r for r in TABLE.in_preference_order() if r.group == group and r.kind == kind]
        if not mappings:
            err = f'no matches for kind "{kind}" in group "{group}"'
            raise await failed(err, f"unable to determine resource for scale target reference: {err}")
        first: Exception | None = None
        for r in mappings:
            try:
                scale = await self.client.get(r, str(ref.get("name") or ""), namespace, subresource="scale")
                return scale, r
            except (errors.StatusError, ConnectionError) as e:
                first = first or e
        raise await failed(first, f"failed to query scale subresource for {reference}: {first}")

    # -- the sync --------------------------------------------------------------------------------------

    async def reconcile_autoscaler(self, shared: Object, key: str) -> None:
        hpa: dict[str, Any] = json_copy(shared)  # the informer's copy is never changed
        original = json_copy(hpa.get("status"))
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        reference = f"{ref.get('kind', '')}/{hpa['metadata'].get('namespace', '')}/{ref.get('name', '')}"

        scale, resource = await self._get_scale(hpa, original, reference)
        self.set_condition(hpa, "AbleToScale", "True", "SucceededGetScale",
                           "the HPA controller was able to get the target's current scale")  # fmt: skip
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        if key not in self.recommendations:
            self.recommendations[key] = [norm.Recommendation(current, self.clock())]

        min_replicas = spec.get("minReplicas")
        min_replicas = 1 if min_replicas is None else int(min_replicas)
        max_replicas = int(spec.get("maxReplicas") or 0)
        metric_statuses: list[dict[str, Any]] | None = None
        desired, reason, rescale = 0, "", True
        retry: ReconcileError | None = None

        if current == 0 and min_replicas != 0:
            # Scaled to zero by hand: autoscaling is off until the target has replicas again.
            rescale = False
            self.set_condition(hpa, "ScalingActive", "False", "ScalingDisabled",
                               "scaling is disabled since the replica count of the target is zero")  # fmt: skip
        elif current > max_replicas:
            reason, desired = "Current number of replicas above Spec.MaxReplicas", max_replicas
        elif current < min_replicas:
            reason, desired = "Current number of replicas below Spec.MinReplicas", min_replicas
        else:
            proposed, metric, metric_statuses, err = await self.compute_replicas_for_metrics(hpa, scale)
            if err is not None and proposed == -1:
                self._set_current(hpa, current, metric_statuses)
                await self._write_quietly(original, hpa)
                self.recorder.event(hpa, "Warning", "FailedComputeMetricsReplicas", err)
                raise ReconcileError(
                    f"failed to compute desired number of replicas based on listed metrics for {reference}: {err}"
                )
            if err is not None:
                # Some metrics worked: scale on them, and report the rest afterwards.
                retry = ReconcileError(err)
            rescale_metric = ""
            if proposed > desired:
                desired, rescale_metric = proposed, metric
            if desired > current:
                reason = f"{rescale_metric} above target"
            if desired < current:
                reason = "All metrics below target"
            if spec.get("behavior") is None:
                desired = self.normalize_desired_replicas(hpa, key, current, desired, min_replicas)
            else:
                desired = self.normalize_desired_replicas_with_behaviors(hpa, key, current, desired, min_replicas)
            rescale = desired != current

        if rescale:
            scale = json_copy(scale)
            scale.setdefault("spec", {})["replicas"] = desired
            try:
                await self.client.update(resource, scale, hpa["metadata"].get("namespace"), subresource="scale")
            except (errors.StatusError, ConnectionError) as e:
                self.recorder.eventf(hpa, "Warning", "FailedRescale", "New size: %d; reason: %s; error: %s",
                                     desired, reason, str(e))  # fmt: skip
                self.set_condition(hpa, "AbleToScale", "False", "FailedUpdateScale",
                                   f"the HPA controller was unable to update the target scale: {e}")  # fmt: skip
                self._set_current(hpa, current, metric_statuses)
                raise await self._fail(original, hpa, f"failed to rescale {reference}: {e}") from None
            self.set_condition(hpa, "AbleToScale", "True", "SucceededRescale",
                               f"the HPA controller was able to update the target scale to {desired}")  # fmt: skip
            self.recorder.eventf(hpa, "Normal", "SuccessfulRescale", "New size: %d; reason: %s", desired, reason)
            norm.store_scale_event(
                spec.get("behavior"), self.scale_up_events.setdefault(key, []),
                self.scale_down_events.setdefault(key, []), current, desired, self.clock(),
            )  # fmt: skip
            log.info("horizontal pod autoscaler %s: rescaled %s from %d to %d: %s", key, reference, current, desired,
                     reason)  # fmt: skip
        else:
            desired = current

        self.set_status(hpa, current, desired, metric_statuses, rescale)
        await self.update_status_if_needed(original, hpa)
        if retry is not None:
            raise retry

    # -- metrics ---------------------------------------------------------------------------------------

    async def compute_replicas_for_metrics(
        self, hpa: dict[str, Any], scale: Object
    ) -> tuple[int, str, list[dict[str, Any]] | None, str | None]:
        """(the highest proposal, its metric's name, every metric's status, error). The count is -1 when
        nothing may be done: no metric worked, or some failed while the rest would scale down."""
        specs: list[Object] = list((hpa.get("spec") or {}).get("metrics") or [])
        try:
            selector = self.validate_and_parse_selector(hpa, str((scale.get("status") or {}).get("selector") or ""))
        except ReconcileError as e:
            return -1, "", None, str(e)
        spec_replicas = int((scale.get("spec") or {}).get("replicas") or 0)
        status_replicas = int((scale.get("status") or {}).get("replicas") or 0)

        def warn(reason: str, message: str) -> None:
            self.recorder.event(hpa, "Warning", reason, message)

        # A metric that fails keeps its zero-valued status (`type: ""`), as upstream's status list does.
        statuses: list[dict[str, Any]] = [{"type": ""} for _ in specs]
        replicas, metric, invalid = 0, "", 0
        first_error: str | None = None
        first_condition: Condition | None = None
        for i, metric_spec in enumerate(specs):
            try:
                proposal: Proposal = await self.proposer.propose(hpa, metric_spec, spec_replicas, status_replicas,
                                                                 selector, warn)  # fmt: skip
            except MetricFailure as f:
                if invalid == 0:
                    first_error, first_condition = str(f), f.condition
                invalid += 1
                continue
            statuses[i] = proposal.status
            if replicas == 0 or proposal.replicas > replicas:
                replicas, metric = proposal.replicas, proposal.metric

        error = None
        if first_error is not None:
            error = f"invalid metrics ({invalid} invalid out of {len(specs)}), first error is: {first_error}"
        if invalid >= len(specs) or (invalid > 0 and replicas < spec_replicas):
            if first_condition is not None:
                self._apply(hpa, first_condition)
            return -1, "", statuses, error
        self.set_condition(hpa, "ScalingActive", "True", "ValidMetricFound",
                           f"the HPA was able to successfully calculate a replica count from {metric}")  # fmt: skip
        return replicas, metric, statuses, error

    def validate_and_parse_selector(self, hpa: dict[str, Any], text: str) -> LabelSelector:
        """The target's selector, which must be set, parse, and select pods that no other autoscaler does."""
        if not text:
            self.recorder.event(hpa, "Warning", "SelectorRequired", "selector is required")
            self.set_condition(hpa, "ScalingActive", "False", "InvalidSelector",
                               "the HPA target's scale is missing a selector")  # fmt: skip
            raise ReconcileError("selector is required")
        try:
            selector = parse_label_selector(text)
        except SelectorError as e:
            message = f"couldn't convert selector into a corresponding internal selector object: {e}"
            self.recorder.event(hpa, "Warning", "InvalidSelector", message)
            self.set_condition(hpa, "ScalingActive", "False", "InvalidSelector", message)
            raise ReconcileError(message) from None
        md = hpa["metadata"]
        key = f"{md.get('namespace', '')}/{md.get('name', '')}"
        self.selectors.put(key, selector)
        controlling = self.selectors.controlling(self.list_pods(str(md.get("namespace") or ""), selector))
        if len(controlling) > 1:
            message = f"pods by selector {text} are controlled by multiple HPAs: [{' '.join(controlling)}]"
            self.recorder.event(hpa, "Warning", "AmbiguousSelector", message)
            self.set_condition(hpa, "ScalingActive", "False", "AmbiguousSelector", message)
            raise ReconcileError(message)
        return selector

    # -- normalization --------------------------------------------------------------------------------

    def normalize_desired_replicas(self, hpa: dict[str, Any], key: str, current: int, desired: int,
                                   min_replicas: int) -> int:  # fmt: skip
        """Without behavior: the highest recommendation of the stabilization window, within the limits."""
        recs = self.recommendations.setdefault(key, [])
        stabilized = norm.stabilize_recommendation(recs, desired, self.downscale_stabilization, self.clock())
        if stabilized != desired:
            self.set_condition(hpa, "AbleToScale", "True", *norm.SCALE_DOWN_STABILIZED)
        else:
            self.set_condition(hpa, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        max_replicas = int((hpa.get("spec") or {}).get("maxReplicas") or 0)
        result, reason, message = norm.convert_desired_replicas_with_rules(current, stabilized, min_replicas,
                                                                          max_replicas)  # fmt: skip
        self.set_condition(hpa, "ScalingLimited", "False" if result == stabilized else "True", reason, message)
        return result

    def normalize_desired_replicas_with_behaviors(self, hpa: dict[str, Any], key: str, current: int, desired: int,
                                                  min_replicas: int) -> int:  # fmt: skip
        """With behavior: stabilized over each direction's window, then held to its policies and the limits."""
        spec = hpa.get("spec") or {}
        behavior = spec.get("behavior") or {}
        scale_down = dict(behavior.get("scaleDown") or {})
        if behavior.get("scaleDown") is not None and scale_down.get("stabilizationWindowSeconds") is None:
            # The API leaves it unset so that the flag decides (upstream: maybeInitScaleDownStabilizationWindow).
            scale_down["stabilizationWindowSeconds"] = int(self.downscale_stabilization)
        args = norm.NormalizationArg(
            key=key, scale_up=behavior.get("scaleUp") or {}, scale_down=scale_down, min_replicas=min_replicas,
            max_replicas=int(spec.get("maxReplicas") or 0), current_replicas=current, desired_replicas=desired,
        )  # fmt: skip
        now = self.clock()
        recs = self.recommendations.setdefault(key, [])
        stabilized, reason, message = norm.stabilize_recommendation_with_behaviors(recs, args, now)
        if stabilized != desired:
            self.set_condition(hpa, "AbleToScale", "True", reason, message)
        else:
            self.set_condition(hpa, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        args = norm.NormalizationArg(**{**args.__dict__, "desired_replicas": stabilized})
        result, reason, message = norm.convert_desired_replicas_with_behavior_rate(
            args, self.scale_up_events.get(key, []), self.scale_down_events.get(key, []), now
        )
        self.set_condition(hpa, "ScalingLimited", "False" if result == stabilized else "True", reason, message)
        return result


def rfc3339_at(seconds: float) -> str:
    """A metav1.Time at `seconds` since the epoch, as it is written (whole seconds)."""
    return rfc3339(dt.datetime.fromtimestamp(int(seconds), dt.UTC))
