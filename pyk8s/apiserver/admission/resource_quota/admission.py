"""The ResourceQuota admission plugin (upstream: apiserver/pkg/admission/plugin/resourcequota/{admission,
controller,resource_access}.go): before a namespaced object is written, its usage is checked against every
quota of the namespace that covers it and charged to `status.used` of those quotas, so that two writes racing
for the last unit cannot both have it.

One namespace's writes are checked one at a time (upstream batches them per namespace on a work queue); a
status write that loses to another writer (the resource quota controller) is retried on the stored quota up to
three times. A quota whose `status` the controller has not filled in yet refuses what it covers ("status
unknown"), as upstream's does. With `limitedResources` configured (config.py), what they name is refused in a
namespace whose quotas do not cover it. Subresources are never looked at, as upstream's plugin ignores them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ....api import errors
from ....api.meta import Object, json_copy
from ...authn import UserInfo
from .. import CREATE, UPDATE, Attributes, reads
from ..errors import new_forbidden
from . import resources as rq
from .config import (
    LimitedResource,
    ResourceQuotaConfiguration,
    go_scopes,
    limited_by_default,
    limited_scopes,
    uncovered_scopes,
)
from .evaluators import IGNORED_RESOURCES, Evaluator, Registry, ScopeSelector, matches, matching_scopes, scope_selectors

QUOTA_GV, QUOTAS = "v1", "resourcequotas"
EVALUATION_TIMEOUT = 10.0
STATUS_RETRIES = 3
# Who writes a quota's status from here (upstream: the API server's loopback client).
LOOPBACK_USER = UserInfo("system:apiserver", groups=("system:authenticated", "system:masters"))


class QuotaError(Exception):
    """A refusal found while checking: raised to the client as is."""


def _rv(obj: Object) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _name(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def check_request(
    quotas: list[Object], a: Attributes, evaluator: Evaluator, limited: tuple[LimitedResource, ...] = ()
) -> list[Object]:
    """The quotas with the request's usage added, or a Forbidden (upstream: CheckRequest); `limited` is the
    configuration's limitedResources, which must be covered by some quota even when the namespace has none."""
    if not evaluator.handles(a.operation, a.subresource) or a.object is None:
        return quotas
    obj = a.object
    scopes_limited = limited_scopes(evaluator, obj, limited)
    names_limited: set[str] = set()
    mine = [lr for lr in limited if (lr.api_group, lr.resource) == (a.resource.group, a.resource.plural)]
    if mine:
        names_limited = set(limited_by_default(evaluator.usage(obj), mine))
    interesting: list[int] = []
    covered: set[str] = set()
    scopes_covered: list[ScopeSelector] = []
    for i, quota in enumerate(quotas):
        scopes_covered += matching_scopes(evaluator, obj, scope_selectors(quota))
        if not matches(evaluator, quota, obj):
            continue
        status = quota.get("status") or {}
        hard = status.get("hard") or {}
        restricted = evaluator.matching_resources(hard)
        problem = evaluator.constraints(restricted, obj)
        if problem:
            raise new_forbidden(a, f"failed quota: {_name(quota)}: {problem}")
        used = status.get("used") or {}
        if any(name not in used for name in hard if name in restricted):
            raise new_forbidden(
                a, f"status unknown for quota: {_name(quota)}, resources: {rq.pretty_print_names(restricted)}"
            )
        interesting.append(i)
        covered.update(restricted)
    delta = evaluator.usage(obj)
    negative = rq.is_negative(delta)
    if negative:
        raise new_forbidden(a, f"quota usage is negative for resource(s): {rq.pretty_print_names(negative)}")
    if a.operation == UPDATE:
        if a.old_object is None:
            raise new_forbidden(a, "unable to get previous usage since prior version of object was not found")
        if (a.old_object.get("metadata") or {}).get("resourceVersion"):
            delta = rq.subtract_with_non_negative_result(delta, evaluator.usage(a.old_object))
    delta = rq.remove_zeros(delta)
    if not delta:
        return quotas
    uncovered = names_limited - covered
    if uncovered:
        raise new_forbidden(a, f"insufficient quota to consume: {','.join(sorted(uncovered))}")
    scopes_uncovered = uncovered_scopes(scopes_limited, scopes_covered)
    if scopes_uncovered:  # a plain error upstream, which its handler answers as a 500 without a reason
        raise errors.StatusError(500, "", f"insufficient quota to match these scopes: {go_scopes(scopes_uncovered)}")
    if not interesting:
        return quotas
    out = list(quotas)
    for i in interesting:
        quota = quotas[i]
        status = quota.get("status") or {}
        hard, used = rq.parse(status.get("hard")), rq.parse(status.get("used"))
        requested = rq.mask(delta, hard)
        new_used = rq.add(used, requested)
        allowed, exceeded = rq.less_than_or_equal(rq.mask(new_used, requested), hard)
        if not allowed:
            raise new_forbidden(a, (
                f"exceeded quota: {_name(quota)}, requested: {rq.pretty_print(rq.mask(requested, exceeded))}, "
                f"used: {rq.pretty_print(rq.mask(used, exceeded))}, limited: {rq.pretty_print(rq.mask(hard, exceeded))}"
            ))  # fmt: skip
        changed = json_copy(quota)
        changed.setdefault("status", {})["used"] = rq.to_json(new_used)
        out[i] = changed
    return out


class ResourceQuota:
    name = "ResourceQuota"

    def __init__(self, host: Any, *, registry: Registry | None = None, timeout: float = EVALUATION_TIMEOUT,
                 config: ResourceQuotaConfiguration | None = None) -> None:  # fmt: skip
        self.host = host
        self.limited = (config or ResourceQuotaConfiguration()).limited_resources
        self.registry = registry or Registry()
        self.timeout = timeout
        self._locks: dict[str, asyncio.Lock] = {}
        # The quotas this plugin wrote last, kept until the cache has caught up (upstream: updatedQuotas LRU).
        self._written: dict[str, Object] = {}

    async def admit(self, a: Attributes) -> None:
        return None

    async def validate(self, a: Attributes) -> None:
        if a.subresource:
            return  # upstream's plugin ignores every subresource (an eviction, a status write)
        if not a.namespace or (a.operation == CREATE and a.resource.group == "" and a.resource.plural == "namespaces"):
            return
        if (a.resource.group, a.resource.plural) in IGNORED_RESOURCES:
            return
        evaluator = self.registry.get(a.resource.group, a.resource.plural)
        if not evaluator.handles(a.operation, a.subresource) or a.object is None:
            return
        if not self.limited and not await self._quotas(a.namespace):
            return  # the common case, without taking the namespace's turn
        try:
            await asyncio.wait_for(self._evaluate(a, evaluator), self.timeout)
        except TimeoutError:
            raise errors.internal_error("resource quota evaluation timed out") from None

    async def _evaluate(self, a: Attributes, evaluator: Evaluator) -> None:
        lock = self._locks.setdefault(a.namespace, asyncio.Lock())
        async with lock:
            quotas = await self._quotas(a.namespace)
            if quotas or self.limited:  # limited resources are refused where no quota covers them
                await self._check_quotas(quotas, a, evaluator, STATUS_RETRIES)

    async def _quotas(self, namespace: str) -> list[Object]:
        """The namespace's quotas: cached (live while the cache starts), each replaced by the copy this plugin
        wrote when the cache has not seen it yet."""
        rest = reads.rest_of(self.host, QUOTA_GV, QUOTAS)
        if rest is None:
            return []
        items = reads.cached_list(self.host, QUOTA_GV, QUOTAS, namespace) if rest.cacher.ready else []
        if not items and not rest.cacher.ready:
            items = await reads.live_list(self.host, QUOTA_GV, QUOTAS, namespace)
        out = []
        for quota in items:
            key = f"{namespace}/{_name(quota)}"
            written = self._written.get(key)
            if written is not None:
                if _rv(quota) >= _rv(written):
                    self._written.pop(key, None)
                else:
                    quota = written
            out.append(quota)
        return out

    async def _check_quotas(self, quotas: list[Object], a: Attributes, evaluator: Evaluator, retries: int) -> None:
        new = check_request(quotas, a, evaluator, self.limited)
        if a.dry_run:
            return
        changed = [q for old, q in zip(quotas, new, strict=True)
                   if not rq.equals(rq.parse((old.get("status") or {}).get("used")),
                                    rq.parse((q.get("status") or {}).get("used")))]  # fmt: skip
        failed: list[str] = []
        last: errors.StatusError | None = None
        for quota in changed:
            try:
                await self._update_status(quota)
            except errors.StatusError as err:
                if err.code not in (409, 404):
                    raise
                failed.append(_name(quota))
                last = err
        if not failed:
            return
        if retries <= 0:
            assert last is not None
            raise last
        fresh = await reads.live_list(self.host, QUOTA_GV, QUOTAS, a.namespace)
        retry = [q for q in fresh if _name(q) in failed]
        if retry:
            await self._check_quotas(retry, a, evaluator, retries - 1)

    async def _update_status(self, quota: Object) -> None:
        from ....storage.interface import Preconditions
        from ...registry.rest import Context  # the registry imports admission: imported when first needed

        rest = reads.rest_of(self.host, QUOTA_GV, QUOTAS)
        md = quota["metadata"]
        wanted_used = (quota.get("status") or {}).get("used") or {}

        async def updater(current: Object | None) -> Object:
            if current is None:
                raise errors.not_found(QUOTAS, md["name"])
            current.setdefault("status", {})["used"] = wanted_used
            return current

        stored, _ = await rest.update(
            md["namespace"], md["name"], updater, Context(LOOPBACK_USER, field_manager="kube-apiserver"),
            subresource="status", preconditions=Preconditions(resource_version=md.get("resourceVersion")),
        )  # fmt: skip
        self._written[f"{md['namespace']}/{md['name']}"] = stored
