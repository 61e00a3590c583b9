"""`RESTStore`: one resource's REST semantics over storage and its watch cache (upstream:
apiserver/pkg/registry/generic/registry/store.go).

Create, update, delete and reads follow upstream's rules: generated names with retries, uid and timestamps,
the strategy's defaulting, validation and status split, resourceVersion preconditions, finalizers and
graceful deletion, and the resourceVersion / resourceVersionMatch table for lists. Objects here are in the
resource's storage version; converting to and from the version a client speaks is the handler's job.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ...api import errors, managed_fields, meta, schema, validation
from ...api.errors import StatusError
from ...api.field_manager import FieldManager
from ...api.meta import Object, json_copy
from ...api.resources import Resource
from ...api.selectors import EVERYTHING as ALL_LABELS
from ...api.selectors import FieldSelector, LabelSelector
from ...api.types.codec import DecodeError, codec_for
from ...storage import (
    REQUEST_WATCH_PROGRESS,
    ConflictError,
    GoneError,
    InvalidContinueError,
    InvalidKeyError,
    InvalidObjectError,
    KeyExistsError,
    KeyNotFoundError,
    Preconditions,
    RequestTooLargeError,
    StorageError,
    Store,
    TooLargeResourceVersionError,
    keys,
)
from ...storage.cacher import Cacher, CacheWatcher, Predicate
from ...storage.continue_token import decode_continue, encode_continue
from ...storage.keys import key_after
from ..admission import CREATE, UPDATE, Attributes, Chain
from ..authn import UserInfo
from .admit import admit_delete
from .strategy import (
    FINALIZER_FOREGROUND,
    FINALIZER_ORPHAN,
    Strategy,
    validate_object_meta,
    validate_object_meta_update,
)

log = logging.getLogger(__name__)

GENERATE_NAME_RETRIES = 8
MATCH_EXACT, MATCH_NOT_OLDER_THAN = "Exact", "NotOlderThan"


@dataclass
class ListOptions:
    label_selector: LabelSelector = ALL_LABELS
    field_selector: FieldSelector = field(default_factory=FieldSelector)
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""
    allow_bookmarks: bool = False
    send_initial_events: bool | None = None  # a WatchList: the current state as events, then changes


@dataclass
class DeleteOptions:
    grace_period_seconds: int | None = None
    preconditions: Preconditions | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    dry_run: bool = False


@dataclass
class ListResult:
    items: list[Object]
    resource_version: str
    continue_token: str = ""
    remaining_item_count: int | None = None


@dataclass
class Context:
    """Who asks, and how (what every write needs besides the object)."""

    user: UserInfo
    dry_run: bool = False
    field_manager: str = ""
    #: the write is a server-side apply, whose managedFields the apply itself has set
    applied: bool = False
    #: validating admission of a kind that is only created (an access review), for its handler to call where
    #: upstream's REST object calls createValidation (registry/admit.py)
    create_validation: Callable[[Object], Awaitable[None]] | None = None


Updater = Callable[[Object | None], Awaitable[Object]]
# A store's own check of a create or update, after mutating admission and before validating admission:
# (operation, namespace, the URL's name ("" for a POST), new object, stored object or None, context). Upstream's
# storages that wrap the generic one (RBAC's escalation checks) do theirs at that point.
BeforeWrite = Callable[[str, str, str, Object, Object | None, Context], Awaitable[None]]


def parse_resource_version(rv: str, what: str = "resourceVersion") -> int:
    try:
        n = int(rv)
    except ValueError:
        raise errors.bad_request(
            f"Invalid value: {errors.go_quote(rv)}: {what} must be a non-negative integer"
        ) from None
    if n < 0:
        raise errors.bad_request(f"Invalid value: {errors.go_quote(rv)}: {what} must be a non-negative integer")
    return n


class RESTStore:
    """The REST behaviour of one (storage) resource."""

    def __init__(
        self,
        resource: Resource,
        strategy: Strategy,
        store: Store,
        cacher: Cacher,
        admission: Chain,
    ) -> None:
        self.resource = resource
        self.strategy = strategy
        self.store = store
        self.cacher = cacher
        self.admission = admission
        self.codec = codec_for(resource.group, resource.version, resource.kind)
        self.verify_typed = os.environ.get("PYK8S_VERIFY_TYPED") == "1"
        self._field_managers: dict[str, FieldManager] = {}
        self.before_write: BeforeWrite | None = None

    # -- helpers ---------------------------------------------------------------------------------------

    def key(self, namespace: str, name: str) -> str:
        # Upstream's key functions refuse a name that is not a path segment before anything reaches storage.
        if name in (".", "..") or "/" in name or "%" in name:
            msgs = validation.is_valid_path_segment_name(name)
            raise errors.bad_request(f"Name parameter invalid: {errors.go_quote(name)}: {';'.join(msgs)}")
        key = self.resource.key(namespace, name)
        try:
            keys.object_key(key, self.store.prefix)
        except InvalidKeyError:
            # A key storage cannot hold (a control character, too long): no object has it, as creates validate
            # names first, so none is found.
            raise self.not_found(name) from None
        return key

    def not_found(self, name: str) -> StatusError:
        return errors.not_found(self.resource.plural, name, self.resource.group)

    def conflict(self, name: str, reason: str = errors.OBJECT_MODIFIED) -> StatusError:
        return errors.conflict(self.resource.plural, name, reason, self.resource.group)

    def invalid(self, name: str, errs: list[errors.FieldError]) -> StatusError:
        return errors.invalid_object(self.resource.kind, name, errs, self.resource.group)

    def record_manager(self, new: Object, old: Object | None, ctx: Context, subresource: str) -> None:
        """Keep managedFields: the write's field manager owns what it set (api/managed_fields for a create,
        api/field_manager for the rest). A server-side apply has set them itself."""
        if ctx.applied:
            return
        if old is None:
            new["metadata"].pop("managedFields", None)
        if not ctx.field_manager:
            return
        if old is None:
            node = self.schema_node()
            managed_fields.record_create(
                new, node, ctx.field_manager, self.resource.api_version, self.zero_value(), subresource
            )
            return
        self.field_manager(subresource).update(old, new, ctx.field_manager)

    def schema_node(self) -> schema.Node | None:
        """The stored kind's schema, which managedFields are recorded by."""
        r = self.resource
        return schema.kind_node(r.group, r.version, r.kind)

    def field_manager(self, subresource: str) -> FieldManager:
        """The field manager of writes through the main resource (`""`) or a subresource, in storage version."""
        manager = self._field_managers.get(subresource)
        if manager is None:
            r = self.resource
            node = self.schema_node()
            top_level = list((node.schema.get("properties") or {}) if node is not None else ())
            reset = self.strategy.reset_fields(subresource, top_level)
            manager = FieldManager(node, r.api_version, r.kind, subresource, self.zero_value(), reset)
            self._field_managers[subresource] = manager
        return manager

    def typed(self, obj: Object) -> Object:
        """The object as upstream would store it (api/types/codec), for an object that was decoded on its way
        in and then changed by the server: its top level is put into stored form (a status the strategy left
        out gets its type's zero value), and the values below it are as the request's decode made them. What
        the server itself writes into them (BeforeCreate's uid and timestamps, the strategies' defaults and
        statuses, the field manager's entries) is written in stored form, which the test suite checks on every
        write (PYK8S_VERIFY_TYPED=1): a second walk over every object would cost each write more than a tenth
        of its CPU."""
        if self.codec is None:
            return obj
        try:
            typed: Object = self.codec.decode_top(obj)
        except DecodeError as e:
            # Values that passed the request's decode but not this one came through a conversion (an
            # annotation of autoscaling/v1's): the client's input all the same.
            raise errors.cannot_decode(self.resource.kind, self.resource.version, e) from None
        if self.verify_typed:
            self._verify_typed(typed)
        return typed

    def _verify_typed(self, obj: Object) -> None:
        assert self.codec is not None
        again = self.codec.decode(json_copy(obj))
        if again != obj:
            diff = "; ".join(_differences(obj, again))
            log.error("%s written in a form upstream would not store: %s", self.resource.kind, diff)
            raise errors.internal_error(f"{self.resource.kind} written in a form upstream would not store: {diff}")

    def attrs(self, obj: Object) -> tuple[dict[str, str], dict[str, str]]:
        return meta.labels_of(obj), self.strategy.fields(obj)

    def predicate(self, opts: ListOptions) -> Predicate:
        labels_match = None if opts.label_selector.empty else opts.label_selector.matches
        fields_match = None if opts.field_selector.empty else opts.field_selector.matches
        fields_exact = None if opts.field_selector.empty else opts.field_selector.exact
        return Predicate(labels_match, fields_match, fields_exact)

    def check_field_selector(self, sel: FieldSelector) -> None:
        supported = set(self.strategy.supported_fields())
        for f in sel.fields():
            if f not in supported:
                raise errors.bad_request(f"field label not supported: {f}")

    def _storage_error(self, err: StorageError, name: str = "") -> StatusError:
        if isinstance(err, KeyNotFoundError | InvalidKeyError):
            # A name storage cannot hold (a control character) names no object: none can have been created.
            return self.not_found(name)
        if isinstance(err, KeyExistsError):
            return errors.already_exists(self.resource.plural, name, self.resource.group)
        if isinstance(err, ConflictError):
            return self.conflict(name, str(err))
        if isinstance(err, GoneError):
            return errors.expired(str(err))
        if isinstance(err, TooLargeResourceVersionError):
            return errors.timeout(f"Too large resource version: {err.revision}, current: {err.current}", 1)
        if isinstance(err, InvalidContinueError):
            return errors.bad_request(str(err))
        if isinstance(err, RequestTooLargeError):
            # Upstream passes etcd's error on as a 500 (kubernetes#112152); it is the client's object that is
            # too large, so pyk8s answers 413 with the same words.
            return errors.request_entity_too_large(str(err))
        if isinstance(err, InvalidObjectError):
            return errors.bad_request(f"the object cannot be stored: {err}")
        return errors.internal_error(str(err))

    # -- reads -----------------------------------------------------------------------------------------

    async def _cache_serves(self, resource_version: str) -> bool:
        """Whether the watch cache answers a read at `resource_version`, once it may (see `_cache_at`). A
        consistent read ("") is the cache's only when storage answers progress requests reliably, so the cache
        can prove it has caught up (upstream: ConsistentListFromCache with RequestWatchProgress supported), and
        it caught up in time; else storage answers it, as upstream's does."""
        if not self.cacher.ready:
            return False
        if resource_version == "" and not self.store.supports(REQUEST_WATCH_PROGRESS):
            return False
        try:
            await self._cache_at(resource_version)
        except TooLargeResourceVersionError:
            if resource_version != "":
                raise
            return False
        return True

    async def _cache_at(self, resource_version: str) -> None:
        """Wait until the watch cache may answer a read at `resource_version`: "" is a consistent read (the
        cache catches up with storage's current revision, as upstream's consistent reads from cache do, so
        no storage read and no decode), "0" is any version, otherwise that version or newer."""
        if resource_version == "":
            await self.cacher.wait_until_fresh(await self.store.current_revision())
        elif resource_version != "0":
            await self.cacher.wait_until_fresh(parse_resource_version(resource_version))

    async def get(self, namespace: str, name: str, resource_version: str = "") -> Object:
        key = self.key(namespace, name)
        try:
            if not await self._cache_serves(resource_version):
                return await self.store.get(key)
        except StorageError as err:
            raise self._storage_error(err, name) from None
        entry = self.cacher.get(key)
        if entry is None:
            raise self.not_found(name)
        return entry.obj

    def validate_list_options(self, opts: ListOptions, watch: bool = False) -> None:
        """Upstream's ValidateListOptions (meta/internalversion/validation) for a list or a watch, WatchList on."""
        errs: list[errors.FieldError] = []
        match = opts.resource_version_match
        if watch:
            if opts.send_initial_events is not None and match != MATCH_NOT_OLDER_THAN:
                errs.append(
                    errors.forbidden(
                        "resourceVersionMatch",
                        f"sendInitialEvents requires setting resourceVersionMatch to {MATCH_NOT_OLDER_THAN}",
                    )
                )
            if match:
                if opts.send_initial_events is None:
                    errs.append(
                        errors.forbidden(
                            "resourceVersionMatch",
                            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                        )
                    )
                if match != MATCH_NOT_OLDER_THAN:
                    errs.append(errors.not_supported("resourceVersionMatch", match, [MATCH_NOT_OLDER_THAN]))
                if opts.continue_token:
                    errs.append(
                        errors.forbidden(
                            "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"
                        )
                    )
        elif match:
            if opts.resource_version == "":
                errs.append(
                    errors.forbidden(
                        "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"
                    )
                )
            if opts.continue_token:
                errs.append(
                    errors.forbidden(
                        "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"
                    )
                )
            if match not in (MATCH_EXACT, MATCH_NOT_OLDER_THAN):
                errs.append(
                    errors.not_supported("resourceVersionMatch", match, [MATCH_EXACT, MATCH_NOT_OLDER_THAN, ""])
                )
            if match == MATCH_EXACT and opts.resource_version == "0":
                errs.append(
                    errors.forbidden(
                        "resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
                    )
                )
        if not watch and opts.send_initial_events is not None:
            errs.append(errors.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
        if errs:
            raise errors.invalid_object("ListOptions", "", errs, "meta.k8s.io")
        if opts.resource_version:
            parse_resource_version(opts.resource_version)
        if opts.limit < 0:
            raise errors.bad_request("limit must be a non-negative integer")
        self.check_field_selector(opts.field_selector)

    def _delegate_list(self, opts: ListOptions) -> bool:
        # upstream cacher.shouldDelegateList: continuations and paginated requests (other than at "0") and
        # exact matches go to storage; the rest are served from the cache when it may (_cache_serves).
        if not self.cacher.ready:
            return True
        if opts.continue_token:
            return True
        if opts.limit > 0 and opts.resource_version != "0":
            return True
        return opts.resource_version_match not in ("", MATCH_NOT_OLDER_THAN)

    async def list_objects(self, namespace: str, opts: ListOptions) -> ListResult:
        self.validate_list_options(opts)
        prefix = self.resource.collection_key(namespace)
        pred = self.predicate(opts)
        try:
            if not self._delegate_list(opts) and await self._cache_serves(opts.resource_version):
                entries, rev = self.cacher.list(prefix, pred)
                return ListResult([en.obj for en in entries], str(rev))
            return await self._list_from_storage(prefix, opts, pred)
        except StorageError as err:
            raise self._storage_error(err) from None

    async def _list_from_storage(self, prefix: str, opts: ListOptions, pred: Predicate) -> ListResult:
        revision: int | None = None
        token = opts.continue_token
        if token:
            if opts.resource_version not in ("", "0"):
                raise errors.bad_request("specifying resource version is not allowed when using continue")
        elif opts.resource_version not in ("", "0"):
            rv = parse_resource_version(opts.resource_version)
            exact = opts.resource_version_match == MATCH_EXACT or (opts.resource_version_match == "" and opts.limit > 0)
            if exact:
                revision = rv
            else:
                current = await self.store.current_revision()
                if current < rv:
                    if self.cacher.ready:
                        await self.cacher.wait_until_fresh(rv)
                    current = await self.store.current_revision()
                    if current < rv:
                        raise TooLargeResourceVersionError(rv, current)
        if pred.everything:
            res = await self.store.list(prefix, limit=opts.limit, continue_token=token or None, revision=revision)
            return ListResult(res.items, str(res.revision), res.continue_token or "", res.remaining_item_count)
        # With a selector, keep reading pages until `limit` objects match (upstream's etcd3 GetList does too).
        items: list[Object] = []
        page = max(opts.limit, 500) if opts.limit else 0
        while True:
            # A continue token carries its own revision (and the store refuses both).
            res = await self.store.list(
                prefix, limit=page, continue_token=token or None, revision=None if token else revision
            )
            revision = res.revision
            for obj in res.items:
                labels, fields = self.attrs(obj)
                if pred.matches(labels, fields):
                    items.append(obj)
                    if opts.limit and len(items) == opts.limit:
                        last_key = self.key(meta.namespace_of(obj), meta.name_of(obj))
                        more = obj is not res.items[-1] or bool(res.continue_token)
                        next_token = encode_continue(key_after(last_key), prefix, revision) if more else ""
                        return ListResult(items, str(revision), next_token)
            if not res.continue_token:
                return ListResult(items, str(revision))
            token = res.continue_token

    async def watch(self, namespace: str, opts: ListOptions, name: str = "") -> CacheWatcher:
        self.validate_list_options(opts, watch=True)
        prefix = self.key(namespace, name) if name else self.resource.collection_key(namespace)
        pred = self.predicate(opts)
        from_rv: int | None = parse_resource_version(opts.resource_version) if opts.resource_version else None
        try:
            if opts.send_initial_events is None:
                return await self.cacher.watch(prefix, from_rv, pred, bookmarks=opts.allow_bookmarks)
            # A WatchList (resourceVersionMatch=NotOlderThan): the state at a revision no older than asked for ("":
            # the latest, as a consistent list; "0": any), as ADDED events and, for a client that takes bookmarks,
            # the bookmark that says they are all there; or, without initial events, the changes from then on.
            try:
                await self._cache_at(opts.resource_version)
            except TooLargeResourceVersionError:
                if opts.resource_version != "":
                    raise
            if opts.send_initial_events:
                return await self.cacher.watch(
                    prefix, None, pred, bookmarks=opts.allow_bookmarks, initial_events_end=opts.allow_bookmarks
                )
            return await self.cacher.watch(prefix, self.cacher.revision, pred, bookmarks=opts.allow_bookmarks)
        except StorageError as err:
            raise self._storage_error(err) from None

    async def inconsistent_continue(self, token: str, namespace: str) -> str:
        """For an expired continue token: one that resumes at the same key, at the current revision (upstream
        hands it back with the 410 so a client may finish an inconsistent list)."""
        prefix = self.resource.collection_key(namespace)
        start, _ = decode_continue(token, prefix)
        return encode_continue(start, prefix, await self.store.current_revision())

    # -- create ----------------------------------------------------------------------------------------

    async def prepare_create(
        self, namespace: str, obj: Object, ctx: Context | None = None, user: UserInfo | None = None
    ) -> Object:
        """Everything upstream's BeforeCreate does, short of admission and storage. With `ctx`, the write's
        field manager is recorded once the object has its defaults, before the strategy and admission change
        it (upstream's create handler runs the field manager on the decoded, defaulted object): it owns what
        the client sent and what defaulting filled in, not what the server sets later (a pod's phase and QoS
        class, an admission plugin's priority or tolerations). `user` is who creates it when `ctx` is not given."""
        md = meta.metadata(obj)
        if self.resource.namespaced:
            ns = md.get("namespace") or ""
            if ns and namespace and ns != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            md["namespace"] = namespace or ns
        else:
            md.pop("namespace", None)
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"):
            md.pop(k, None)
        self.strategy.default(obj)
        if ctx is not None:
            self._record_create(obj, ctx)
        self.strategy.admission_defaults(obj)
        self.strategy.prepare_for_create(obj)
        requester = ctx.user if ctx is not None else user
        if requester is not None:
            self.strategy.prepare_for_create_by(obj, requester)
        if not md.get("name") and md.get("generateName"):
            md["name"] = meta.generate_name(md["generateName"])
        md["uid"] = meta.new_uid()
        md["creationTimestamp"] = meta.rfc3339()
        await self.strategy.allocate(obj, None, self)
        errs = validate_object_meta(md, self.resource.namespaced, type(self.strategy).name_validator)
        errs += self.strategy.validate(obj)
        if errs:
            raise self.invalid(md.get("name", ""), errs)
        return obj

    def _record_create(self, obj: Object, ctx: Context) -> None:
        # The status of a kind with a status subresource is a reset field of the main resource (upstream:
        # GetResetFields): a create does not own it.
        status = obj.pop("status", None) if self.strategy.has_status else None
        try:
            self.record_manager(obj, None, ctx, "")
        finally:
            if status is not None:
                obj["status"] = status

    def zero_value(self) -> Any:
        """The kind's zero value as Go writes it, or None without a type codec."""
        return self._zero if self.codec is not None else None

    @functools.cached_property
    def _zero(self) -> Any:
        """The kind's zero value as Go writes it (what upstream's create compares the new object with)."""
        assert self.codec is not None
        return self.codec.decoder.zero()

    async def create(self, namespace: str, obj: Object, ctx: Context) -> Object:
        generated = not meta.metadata(obj).get("name") and bool(meta.metadata(obj).get("generateName"))
        obj = await self.prepare_create(namespace, obj, ctx)
        name = meta.name_of(obj)
        attrs = Attributes(CREATE, self.resource, "", namespace, name, obj, None, ctx.user, ctx.dry_run)
        await self.admission.admit(attrs)
        obj = attrs.object or obj
        if self.before_write is not None:
            await self.before_write(CREATE, namespace, "", obj, None, ctx)
        await self.admission.validate(attrs)
        obj = self.typed(obj)
        for attempt in range(GENERATE_NAME_RETRIES + 1):
            key = self.key(meta.namespace_of(obj), meta.name_of(obj))
            if ctx.dry_run:
                try:
                    await self.store.get(key)
                except KeyNotFoundError:
                    return obj
                raise errors.already_exists(self.resource.plural, meta.name_of(obj), self.resource.group)
            try:
                return await self._store_new(key, obj)
            except KeyExistsError:
                if generated and attempt < GENERATE_NAME_RETRIES:
                    obj["metadata"]["name"] = meta.generate_name(obj["metadata"]["generateName"])
                    continue
                raise errors.already_exists(self.resource.plural, meta.name_of(obj), self.resource.group) from None
            except StorageError as err:
                raise self._storage_error(err, meta.name_of(obj)) from None
        raise AssertionError("unreachable")

    async def _store_new(self, key: str, obj: Object) -> Object:
        try:
            return await self.store.create(key, obj)
        except RequestTooLargeError:
            # As upstream: managedFields can be large and are safe to drop, so try once more without them.
            if not obj["metadata"].pop("managedFields", None):
                raise
            return await self.store.create(key, obj)

    # -- update ----------------------------------------------------------------------------------------

    async def update(
        self,
        namespace: str,
        name: str,
        updater: Updater,
        ctx: Context,
        *,
        subresource: str = "",
        force_allow_create: bool = False,
        preconditions: Preconditions | None = None,
        from_watch_cache: bool = False,
        admit: bool = True,
    ) -> tuple[Object, bool]:
        """Apply `updater` to the current object and store the result; returns (object, created).

        `updater` receives a copy of the current object (None if absent) and returns the desired object;
        it runs again if the object changed underneath (so a patch is re-applied to the latest state).
        `preconditions` (uid, resourceVersion) must hold on the stored object. With `from_watch_cache` the
        first attempt starts from the watch cache's copy instead of reading storage (upstream's
        GuaranteedUpdate with a cached object); a stale copy only costs a retry on the stored state. Without
        `admit`, no admission: a write a REST object makes on the caller's behalf after admitting the request
        itself (a Binding's pod, an Eviction's DisruptionTarget condition).
        """
        key = self.key(namespace, name)
        created = False
        delete_after = False
        without_managed_fields = False

        async def try_update(existing: Object | None) -> Object:
            nonlocal created, delete_after
            created = existing is None
            new = await updater(json_copy(existing) if existing is not None else None)
            if not isinstance(new, dict):
                raise errors.bad_request("the update produced no object")
            md = meta.metadata(new)
            if md.get("name", name) != name:
                raise errors.bad_request(
                    f"the name of the object ({md.get('name')}) does not match the name on the URL ({name})"
                )
            md["name"] = name
            if existing is None:
                if subresource or not (self.strategy.allow_create_on_update or force_allow_create):
                    raise self.not_found(name)
                new = await self.prepare_create(namespace, new, user=ctx.user)
                attrs = Attributes(
                    CREATE, self.resource, subresource, namespace, name, new, None, ctx.user, ctx.dry_run
                )
            else:
                new = self._prepare_update(namespace, name, new, existing, subresource)
                if not subresource:
                    await self.strategy.allocate(new, existing, self)
                attrs = Attributes(
                    UPDATE, self.resource, subresource, namespace, name, new, existing, ctx.user, ctx.dry_run
                )
            if admit:
                await self.admission.admit(attrs)
            new = attrs.object or new
            if self.before_write is not None and not subresource:
                await self.before_write(attrs.operation, namespace, name, new, existing, ctx)
            if admit:
                await self.admission.validate(attrs)
            if subresource != "binding":
                # Upstream's binding writes the pod straight to storage: its field manager tracks the Binding,
                # which is not stored, so the pod's managedFields do not change.
                self.record_manager(new, existing, ctx, subresource)
            if without_managed_fields:
                new["metadata"].pop("managedFields", None)
            new = self.typed(new)
            if existing is not None:
                delete_after = self._should_delete_during_update(new, existing)
            if ctx.dry_run:
                raise _DryRunResult(new)
            return new

        cached = None
        if from_watch_cache and self.cacher.ready and (entry := self.cacher.get(key)) is not None:
            cached = entry.obj  # only read: try_update hands the updater a deep copy
        while True:
            try:
                obj = await self.store.guaranteed_update(
                    key, try_update, ignore_not_found=True, preconditions=preconditions, cached_existing=cached
                )
                break
            except _DryRunResult as r:
                return r.obj, created
            except RequestTooLargeError as err:
                # As upstream: managedFields can be large and are safe to drop, so try once more without them.
                if without_managed_fields:
                    raise self._storage_error(err, name) from None
                without_managed_fields = True
            except StorageError as err:
                raise self._storage_error(err, name) from None
        if delete_after:
            # The last finalizer of an object being deleted is gone: now it really goes.
            md = obj["metadata"]
            try:
                obj = await self.store.delete(
                    key, preconditions=Preconditions(uid=md.get("uid"), resource_version=md.get("resourceVersion"))
                )
            except (KeyNotFoundError, ConflictError):
                pass
        return obj, created

    def _prepare_update(self, namespace: str, name: str, new: Object, old: Object, subresource: str) -> Object:
        md, old_md = meta.metadata(new), old["metadata"]
        rv = md.get("resourceVersion") or ""
        if rv and rv != old_md.get("resourceVersion"):
            raise self.conflict(name)
        if not rv and not self.strategy.allow_unconditional_update:
            raise self.invalid(
                name, [errors.invalid("metadata.resourceVersion", "", "must be specified for an update")]
            )
        if self.resource.namespaced:
            ns = md.get("namespace") or namespace
            if ns != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            md["namespace"] = namespace
        # What the server owns (upstream rest.BeforeUpdate): generation moves only by the strategy, the
        # creation and deletion timestamps cannot change, a missing uid or grace period is the stored one.
        md["generation"] = old_md.get("generation", 0)
        if not md["generation"] and "generation" not in old_md:
            del md["generation"]
        for k in ("creationTimestamp", "deletionTimestamp"):
            if k in old_md:
                md[k] = old_md[k]
        for k in ("uid", "deletionGracePeriodSeconds"):
            if k in old_md and md.get(k) in (None, ""):
                md[k] = old_md[k]
        md["resourceVersion"] = old_md.get("resourceVersion", "")
        if subresource == "binding":
            # A binding sets spec.nodeName and a status condition together; both were checked by its handler.
            errs = validate_object_meta_update(md, old_md)
        elif subresource == "status":
            self.strategy.prepare_for_status_update(new, old)
            errs = validate_object_meta_update(md, old_md) + self.strategy.validate_status_update(new, old)
        elif subresource == "ephemeralcontainers":
            self.strategy.prepare_for_ephemeral_containers_update(new, old)
            errs = validate_object_meta_update(md, old_md) + self.strategy.validate_ephemeral_containers_update(
                new, old
            )
        elif subresource == "approval":
            self.strategy.prepare_for_approval_update(new, old)
            errs = validate_object_meta_update(md, old_md) + self.strategy.validate_approval_update(new, old)
        elif subresource == "finalize":
            self.strategy.prepare_for_finalize(new, old)
            errs = validate_object_meta_update(md, old_md)
        else:
            self.strategy.default(new)
            self.strategy.admission_defaults(new)
            self.strategy.prepare_for_update(new, old)
            errs = validate_object_meta_update(md, old_md) + self.strategy.validate_update(new, old)
        if errs:
            raise self.invalid(name, errs)
        return new

    def _should_delete_during_update(self, new: Object, old: Object) -> bool:
        md = new["metadata"]
        if not md.get("deletionTimestamp") or md.get("finalizers") or self.strategy.deletion_blocked(new):
            return False
        return not md.get("deletionGracePeriodSeconds")

    # -- delete ----------------------------------------------------------------------------------------

    async def delete(
        self, namespace: str, name: str, opts: DeleteOptions, ctx: Context, *, admit: bool = True
    ) -> tuple[Object, bool]:
        """Delete, or mark for deletion; returns (object, whether it is gone). Admission (DELETE, both phases)
        sees the stored object, unless `admit` is off: a REST object deleting on the caller's behalf after its own
        admission (an Eviction), as upstream's with ValidateAllObjectFunc."""
        key = self.key(namespace, name)
        try:
            obj = await self.store.get(key)
        except KeyNotFoundError:
            raise self.not_found(name) from None
        if opts.grace_period_seconds is not None and opts.grace_period_seconds < 0:
            raise self.invalid(name, [errors.invalid("gracePeriodSeconds", opts.grace_period_seconds, "must be >= 0")])
        self._check_delete_preconditions(obj, opts)
        if admit:
            await admit_delete(self.admission, self.resource, namespace, name, obj, opts, ctx)

        grace = self.strategy.graceful_deletion_seconds(obj, opts.grace_period_seconds)
        finalizers = self._finalizers_for_deletion(obj, opts)
        md = obj["metadata"]
        already_deleting = bool(md.get("deletionTimestamp"))
        if grace > 0 or finalizers or already_deleting or self.strategy.deletion_blocked(obj):
            return await self._mark_deleted(key, name, obj, grace, finalizers, opts, ctx)
        if ctx.dry_run:
            return obj, True
        try:
            gone = await self.store.delete(
                key, preconditions=Preconditions(uid=md.get("uid"), resource_version=md.get("resourceVersion"))
            )
        except ConflictError:
            # Changed since we looked: start over on the current state.
            return await self.delete(namespace, name, opts, ctx, admit=admit)
        except KeyNotFoundError:
            raise self.not_found(name) from None
        return gone, True

    def _check_delete_preconditions(self, obj: Object, opts: DeleteOptions) -> None:
        pre = opts.preconditions
        if pre is None:
            return
        md = obj["metadata"]
        if pre.uid is not None and pre.uid != md.get("uid"):
            raise self.conflict(
                md["name"],
                f"Precondition failed: UID in precondition: {pre.uid}, UID in object meta: {md.get('uid', '')}",
            )
        if pre.resource_version is not None and pre.resource_version != md.get("resourceVersion"):
            raise self.conflict(
                md["name"],
                "Precondition failed: ResourceVersion in precondition: "
                f"{pre.resource_version}, ResourceVersion in object meta: {md.get('resourceVersion', '')}",
            )

    def _finalizers_for_deletion(self, obj: Object, opts: DeleteOptions) -> list[str]:
        """The finalizers the object should carry while it is deleted (upstream's GC finalizers)."""
        current = list(obj["metadata"].get("finalizers") or [])
        policy = opts.propagation_policy
        if policy is None and opts.orphan_dependents is not None:
            policy = "Orphan" if opts.orphan_dependents else "Background"
        if policy == "Orphan":
            current = [f for f in current if f != FINALIZER_FOREGROUND]
            if FINALIZER_ORPHAN not in current:
                current.append(FINALIZER_ORPHAN)
        elif policy == "Foreground":
            current = [f for f in current if f != FINALIZER_ORPHAN]
            if FINALIZER_FOREGROUND not in current:
                current.append(FINALIZER_FOREGROUND)
        elif policy == "Background":
            current = [f for f in current if f not in (FINALIZER_ORPHAN, FINALIZER_FOREGROUND)]
        return current

    async def _mark_deleted(
        self,
        key: str,
        name: str,
        obj: Object,
        grace: int,
        finalizers: list[str],
        opts: DeleteOptions,
        ctx: Context,
    ) -> tuple[Object, bool]:
        """Set deletionTimestamp (and the GC finalizers); delete at once if nothing holds the object."""

        def mark(current: Object | None) -> Object:
            if current is None:
                raise KeyNotFoundError(key)
            current = json_copy(current)
            md = current["metadata"]
            if md.get("uid") != obj["metadata"].get("uid"):
                raise KeyNotFoundError(key)
            if opts.propagation_policy or opts.orphan_dependents is not None:
                md["finalizers"] = self._finalizers_for_deletion(current, opts)
            if not md.get("finalizers"):
                md.pop("finalizers", None)
            if not md.get("deletionTimestamp"):
                md["deletionTimestamp"] = meta.rfc3339(meta.now() + dt.timedelta(seconds=grace))
                md["deletionGracePeriodSeconds"] = grace
                self.strategy.on_mark_deleted(current)
            elif grace < (md.get("deletionGracePeriodSeconds") or 0):
                # A shorter grace period than the one in force moves the deadline earlier.
                md["deletionTimestamp"] = meta.rfc3339(meta.now() + dt.timedelta(seconds=grace))
                md["deletionGracePeriodSeconds"] = grace
            return current

        if ctx.dry_run:
            marked = mark(obj)
            return marked, False
        try:
            marked = await self.store.guaranteed_update(key, mark)
        except KeyNotFoundError:
            raise self.not_found(name) from None
        except StorageError as err:
            raise self._storage_error(err, name) from None
        md = marked["metadata"]
        if (
            not md.get("finalizers")
            and not md.get("deletionGracePeriodSeconds")
            and not self.strategy.deletion_blocked(marked)
        ):
            try:
                gone = await self.store.delete(
                    key, preconditions=Preconditions(uid=md.get("uid"), resource_version=md.get("resourceVersion"))
                )
                return gone, True
            except (KeyNotFoundError, ConflictError):
                pass
        return marked, False

    async def delete_collection(
        self, namespace: str, list_opts: ListOptions, opts: DeleteOptions, ctx: Context
    ) -> list[Object]:
        listed = await self.list_objects(namespace, list_opts)
        out = []
        for obj in listed.items:
            try:
                deleted, _ = await self.delete(meta.namespace_of(obj), meta.name_of(obj), opts, ctx)
            except StatusError as err:
                if err.code == 404:
                    continue
                raise
            out.append(deleted)
        return out


def _differences(a: object, b: object, path: str = "") -> list[str]:
    """Where two JSON values differ, as `path: a != b` lines (for the test suite's typed-form check)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            if k not in b:
                out.append(f"{path}.{k}: {a[k]!r} not kept")
            elif k not in a:
                out.append(f"{path}.{k}: missing, upstream writes {b[k]!r}")
            else:
                out += _differences(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


class _DryRunResult(Exception):
    """Carries a dry-run update's result out of guaranteed_update without writing it."""

    def __init__(self, obj: Object) -> None:
        super().__init__("dry run")
        self.obj = obj
