"""Client-side apply and delete from manifests, as `kubectl apply` and `kubectl delete -f` do them.

Apply (upstream: kubectl pkg/cmd/apply, `applyOneObject` and the `Patcher`):
- the last-applied annotation `kubectl.kubernetes.io/last-applied-configuration` holds the configuration
  exactly as kubectl writes it (upstream: util.GetModifiedConfiguration; the encoding is in `last_applied`),
  so a manifest applied by pyk8s and then by kubectl, or the other way round, is "unchanged";
- GET the live object; when it is absent, POST the manifest carrying that annotation
  (`fieldManager=kubectl-client-side-apply`) → "created";
- otherwise compute a three-way patch from original (the live object's annotation), modified (the manifest
  with its new annotation) and current (the live object), `compute_patch`: a strategic merge patch when the
  kind has a schema (upstream: strategicpatch.CreateThreeWayMergePatch), a JSON merge patch otherwise (custom
  resources; upstream: jsonmergepatch.CreateThreeWayJSONMergePatch); both are computed in `three_way_patch`. An
  empty patch is not sent → "unchanged"; else one PATCH → "configured". A 409 Conflict re-reads the object
  and recomputes the patch, up to five times, sleeping a second before each retry after the first
  (upstream: maxPatchRetry, triesBeforeBackOff, backOffPeriod). A single POST or PATCH is atomic on the
  server, so an object the server rejects (422 Invalid, …) is left as it was;
- `dry_run="server"` sends `dryRun=All`; `dry_run="client"` sends no write. Unlike kubectl, which reports every
  existing object as "configured (dry run)" without comparing, the client dry run computes the patch and
  reports "unchanged (dry run)" when there is nothing to send.

Delete (upstream: kubectl pkg/cmd/delete): one DELETE per object with `propagationPolicy` from `--cascade`
(background by default); with `ignore_not_found` a 404 is not an error; kubectl prints `configmap "x" deleted`.

Errors: each object's error names its source and document (`error when creating "app.yaml" (document 2):
...`); a server error keeps its type, code and reason. Objects are processed in manifest order, one at a
time (a Namespace before the objects inside it), and one object's failure does not stop the others
(kubectl's ContinueOnError).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from ..api import errors, schema
from ..api.patch import PatchError
from .last_applied import (
    LAST_APPLIED,
    ApplyError,
    get_modified_configuration,
    get_original_configuration,
    with_apply_annotation,
)
from .resource_builder import Info
from .rest import PatchType, RESTClient
from .three_way_patch import three_way_merge_patch, three_way_strategic_patch

FIELD_MANAGER = "kubectl-client-side-apply"
MAX_PATCH_RETRIES = 5
TRIES_BEFORE_BACKOFF = 1
BACKOFF_PERIOD = 1.0
CASCADE = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan"}

DryRun = Literal["none", "client", "server"]


# -- applying and deleting ---------------------------------------------------------------------------------


@dataclass
class ApplyOptions:
    """How objects are applied (upstream: ApplyOptions, the flags kubectl apply takes)."""

    dry_run: DryRun = "none"
    field_manager: str = FIELD_MANAGER
    field_validation: str | None = "Strict"
    max_patch_retries: int = MAX_PATCH_RETRIES
    backoff: float = BACKOFF_PERIOD
    command: str = "pyk8s"  # named in the warning about a missing annotation


@dataclass
class DeleteOptions:
    """How objects are deleted (upstream: DeleteOptions of kubectl delete)."""

    cascade: str = "background"
    ignore_not_found: bool = False
    grace_period: int | None = None
    dry_run: DryRun = "none"


@dataclass
class Outcome:
    """What happened to one object: its operation ("created", "configured", "unchanged", "deleted"; "" when
    a 404 was ignored or on error), the error, warnings, the patch sent and the server's answer."""

    info: Info
    operation: str = ""
    error: Exception | None = None
    warnings: list[str] = field(default_factory=list)
    patch: dict[str, Any] | None = None
    patch_type: str = ""
    obj: dict[str, Any] | None = None
    dry_run: DryRun = "none"

    @property
    def suffix(self) -> str:
        return {"client": " (dry run)", "server": " (server dry run)"}.get(self.dry_run, "")

    def line(self) -> str:
        """The line kubectl prints: `deployment.apps/web created`, `deployment.apps "web" deleted`."""
        if self.operation == "deleted":
            return f'{self.info.kind_name} "{self.info.name}" deleted{self.suffix}'
        return f"{self.info.object_name} {self.operation}{self.suffix}"


def add_source_to_error(verb: str, info: Info, err: Exception) -> Exception:
    """The error with its source in front, keeping a server error's type, code and reason (upstream:
    cmdutil.AddSourceToErr)."""
    if isinstance(err, errors.StatusError):
        wrapped = type(err)(err.code, err.reason, f"error when {verb} {info.where}: {err.message}", details=err.details)
        wrapped.list_meta = err.list_meta
        return wrapped
    return ApplyError(f"error when {verb} {info.where}: {err}")


def compute_patch(
    info: Info, original: dict[str, Any] | None, modified: dict[str, Any], current: dict[str, Any]
) -> tuple[dict[str, Any], PatchType]:
    """The three-way patch for one object and its type: strategic for kinds with a schema, merge otherwise."""
    r = info.resource
    node = schema.kind_node(r.group, r.version, r.kind)
    if node is not None:
        return three_way_strategic_patch(original, modified, current, node), "strategic"
    return three_way_merge_patch(original, modified, current), "merge"


def _missing_name(info: Info) -> Exception | None:
    if info.name:
        return None
    generate = (info.obj.get("metadata") or {}).get("generateName")
    if generate:
        return ApplyError(f"from {generate}: cannot use generate name with apply")
    return ApplyError(
        f"error when retrieving current configuration of {info.kind_name} from {info.where}: resource name may not be empty"
    )


class _Failed(Exception):
    """Carries one object's error, already naming its source, out of `_apply`."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


async def apply_one(client: RESTClient, info: Info, options: ApplyOptions | None = None) -> Outcome:
    """Apply one object; its failure is returned in the `Outcome`, not raised."""
    opts = options or ApplyOptions()
    out = Outcome(info, dry_run=opts.dry_run)
    out.error = _missing_name(info)
    if out.error is not None:
        return out
    try:
        await _apply(client, info, opts, out)
    except _Failed as failed:
        out.operation = ""
        out.error = failed.error
    return out


def _fail(verb: str, info: Info, err: Exception) -> _Failed:
    return _Failed(add_source_to_error(verb, info, err))


async def _apply(client: RESTClient, info: Info, opts: ApplyOptions, out: Outcome) -> None:
    r = info.resource
    server_dry_run = opts.dry_run == "server"
    try:
        modified = orjson.loads(get_modified_configuration(info.obj, annotate=True))
    except ApplyError as err:
        raise _fail("encoding", info, err) from err
    try:
        live = await client.get(r, info.name, info.namespace)
    except errors.NotFound:
        obj = with_apply_annotation(info.obj)
        out.operation = "created"
        if opts.dry_run == "client":
            out.obj = obj
            return
        try:
            out.obj = await client.create(
                r, obj, info.namespace, dry_run=server_dry_run, field_manager=opts.field_manager,
                field_validation=opts.field_validation,
            )  # fmt: skip
        except (errors.StatusError, ConnectionError) as err:
            raise _fail("creating", info, err) from err
        return
    except (errors.StatusError, ConnectionError) as err:
        raise _fail(f"retrieving current configuration of {info.object_name} from", info, err) from err
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED not in annotations:
        out.warnings.append(
            f"resource {r.plural}/{info.name} is missing the {LAST_APPLIED} annotation which is required by "
            f"{opts.command} apply. {opts.command} apply should only be used on resources created declaratively "
            f"by either {opts.command} create --save-config or {opts.command} apply. The missing annotation will "
            "be patched automatically."
        )
    attempt = 0
    while True:
        try:
            patch, patch_type = compute_patch(info, get_original_configuration(live), modified, live)
        except (ApplyError, PatchError) as err:
            raise _fail("creating patch for", info, err) from err
        out.patch, out.patch_type = patch, patch_type
        if not patch:
            out.operation, out.obj = "unchanged", live
            return
        out.operation = "configured"
        if opts.dry_run == "client":
            out.obj = live
            return
        try:
            out.obj = await client.patch(
                r, info.name, patch, info.namespace, patch_type=patch_type, dry_run=server_dry_run,
                field_manager=opts.field_manager, field_validation=opts.field_validation,
            )  # fmt: skip
            return
        except errors.Conflict as err:
            # Someone wrote in between: read the object again and recompute, as kubectl's Patcher does.
            attempt += 1
            if attempt > opts.max_patch_retries:
                raise _fail("patching", info, err) from err
            if attempt > TRIES_BEFORE_BACKOFF:
                await asyncio.sleep(opts.backoff)
            try:
                live = await client.get(r, info.name, info.namespace)
            except (errors.StatusError, ConnectionError) as get_err:
                raise _fail("patching", info, get_err) from get_err
        except (errors.StatusError, ConnectionError) as err:
            raise _fail("patching", info, err) from err


async def delete_one(client: RESTClient, info: Info, options: DeleteOptions | None = None) -> Outcome:
    """Delete one object; a 404 is not an error with `ignore_not_found` (operation "")."""
    opts = options or DeleteOptions()
    out = Outcome(info, dry_run=opts.dry_run)
    if not info.name:
        out.error = ApplyError(f"error when deleting {info.where}: resource name may not be empty")
        return out
    if opts.dry_run == "client":
        out.operation = "deleted"
        return out
    policy = CASCADE.get(opts.cascade.lower())
    if policy is None:
        out.error = ApplyError(
            f'invalid cascade value ({opts.cascade}). Must be "background", "foreground", or "orphan".'
        )
        return out
    try:
        out.obj = await client.delete(
            info.resource, info.name, info.namespace, propagation_policy=policy,
            grace_period_seconds=opts.grace_period, dry_run=opts.dry_run == "server",
        )  # fmt: skip
        out.operation = "deleted"
    except errors.NotFound as err:
        if not opts.ignore_not_found:
            out.error = add_source_to_error("deleting", info, err)
    except (errors.StatusError, ConnectionError) as err:
        out.error = add_source_to_error("deleting", info, err)
    return out


OnOutcome = Callable[[Outcome], Awaitable[None] | None]


async def _each(
    infos: Iterable[Info], run: Callable[[Info], Awaitable[Outcome]], on_outcome: OnOutcome | None
) -> list[Outcome]:
    outcomes = []
    for info in infos:
        outcome = await run(info)
        outcomes.append(outcome)
        if on_outcome is not None:
            res = on_outcome(outcome)
            if asyncio.iscoroutine(res):
                await res
    return outcomes


async def apply_all(
    client: RESTClient, infos: Iterable[Info], options: ApplyOptions | None = None, on_outcome: OnOutcome | None = None
) -> list[Outcome]:
    """Apply objects one after another in manifest order, calling `on_outcome` after each."""
    opts = options or ApplyOptions()
    return await _each(infos, lambda info: apply_one(client, info, opts), on_outcome)


async def delete_all(
    client: RESTClient, infos: Iterable[Info], options: DeleteOptions | None = None, on_outcome: OnOutcome | None = None
) -> list[Outcome]:
    """Delete objects one after another in manifest order, calling `on_outcome` after each."""
    opts = options or DeleteOptions()
    return await _each(infos, lambda info: delete_one(client, info, opts), on_outcome)
