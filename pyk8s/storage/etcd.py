"""The etcd v3 backend, over gRPC with aetcd's generated stubs.

aetcd's high-level client lacks range `limit`/`revision` and drops watch headers and progress
notifications, so this module talks to etcd through `aetcd.rpc` (the KV and Watch services) directly,
issuing the same transactions kube-apiserver does: create is `If(mod_revision == 0) Then Put`, update
`If(mod_revision == R) Then Put Else Get`, delete `If(mod_revision == R) Then Delete Else Get`.

Progress notifications (watch bookmarks) come from etcd itself at its
`--experimental-watch-progress-notify-interval` (10 minutes by default; tests start etcd with 1 s), and on
request (`EtcdWatch.request_progress`). Requested ones are trusted only from etcd versions that deliver them in
order with the watch's events, as upstream's feature support checker decides (apiserver/pkg/storage/feature):
every endpoint's version is read with the Maintenance Status call, and `supports(REQUEST_WATCH_PROGRESS)` is true
once one endpoint is known to be 3.4.31+ or 3.5.13+ and none is known to be older. Endpoints that cannot be
reached are checked again with backoff (10 ms doubling to 15 s).
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import logging
import re
import socket
from typing import Any

import grpc
from aetcd import rpc

from .errors import GoneError, StorageError, StorageUnavailableError, TooLargeResourceVersionError
from .interface import (
    ADDED,
    BOOKMARK,
    DELETED,
    MODIFIED,
    REQUEST_WATCH_PROGRESS,
    Feature,
    KeyValue,
    RangeResult,
    TxnResult,
    WatchEvent,
)

log = logging.getLogger(__name__)

COMPACT_REV_KEY = b"compact_rev_key"
_MAX_MESSAGE = 2**31 - 1
_PUT = 0  # mvccpb.Event.PUT


def _translate(e: grpc.aio.AioRpcError, *, revision: int = 0) -> StorageError:
    details = e.details() or ""
    if "required revision has been compacted" in details:
        return GoneError(
            "The resourceVersion for the provided list is too old.", revision=revision, compacted_revision=0
        )
    if "required revision is a future revision" in details:
        return TooLargeResourceVersionError(revision, 0)
    return StorageUnavailableError(f"etcd: {e.code().name}: {details}")


def progress_requests_reliable(version: str) -> bool:
    """Whether etcd `version` answers progress requests in order with its watch events (upstream:
    endpointSupportsRequestWatchProgress): 3.4.31+ within 3.4, 3.5.13+ from 3.5 (etcd issues 15220, fixed in
    3.4.25 and 3.5.8, and 17507, fixed in 3.4.31 and 3.5.13). A version that does not parse is not trusted."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?", version.strip())
    if m is None:
        return False
    # A pre-release sorts before its release, as semantic versions do.
    v = (int(m[1]), int(m[2]), int(m[3]), 0 if m[4] else 1)
    return not (v < (3, 4, 31, 1) or (3, 5, 0, 1) <= v < (3, 5, 13, 1))


def grpc_target(endpoints: list[str]) -> str:
    """A gRPC target for one or more `host:port` endpoints (several: a pick-first list of addresses)."""
    if len(endpoints) == 1:
        return endpoints[0]
    addrs = []
    for ep in endpoints:
        host, _, port = ep.rpartition(":")
        host = host.strip("[]")
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            ip = ipaddress.ip_address(socket.getaddrinfo(host, int(port), socket.AF_INET)[0][4][0])
        if ip.version != 4:
            raise ValueError(f"several etcd endpoints must be IPv4 addresses or names: {ep!r}")
        addrs.append(f"{ip}:{port}")
    return "ipv4:" + ",".join(addrs)


class EtcdWatch:
    """One etcd watch stream over [start, end)."""

    def __init__(self, call: Any) -> None:
        self._call = call
        self._events: collections.deque[WatchEvent] = collections.deque()
        self._stopped = False
        # gRPC allows one write at a time on a stream: a second write while one is in flight fails the whole
        # stream ("Internal error from Core"), which ended the watch cache's watch and made it relist.
        self._writing = asyncio.Lock()

    def __aiter__(self) -> EtcdWatch:
        return self

    async def __anext__(self) -> WatchEvent:
        while not self._events:
            if self._stopped:
                raise StopAsyncIteration
            try:
                resp = await self._call.read()
            except asyncio.CancelledError:
                if self._stopped:
                    raise StopAsyncIteration from None
                raise
            except grpc.aio.AioRpcError as e:
                if self._stopped or e.code() == grpc.StatusCode.CANCELLED:
                    raise StopAsyncIteration from None
                await self.stop()
                raise _translate(e) from None
            if resp is grpc.aio.EOF:
                await self.stop()
                raise StorageUnavailableError("etcd closed the watch stream")
            if resp.compact_revision:
                await self.stop()
                raise GoneError(
                    "The resourceVersion for the provided watch is too old.",
                    revision=0,
                    compacted_revision=resp.compact_revision,
                )
            if resp.canceled:
                await self.stop()
                raise StorageUnavailableError(f"etcd cancelled the watch: {resp.cancel_reason}")
            if resp.created:
                continue
            if not resp.events:
                # A progress notification: periodic (if asked for at creation) or answering request_progress().
                return WatchEvent(BOOKMARK, "", resp.header.revision, None)
            for ev in resp.events:
                self._events.append(self._convert(ev))
        return self._events.popleft()

    def _convert(self, ev: Any) -> WatchEvent:
        kv = ev.kv
        key = kv.key.decode()
        has_prev = ev.HasField("prev_kv")
        if ev.type == _PUT:
            if kv.create_revision == kv.mod_revision:
                return WatchEvent(ADDED, key, kv.mod_revision, kv.value)
            if has_prev:
                return WatchEvent(MODIFIED, key, kv.mod_revision, kv.value, ev.prev_kv.value, ev.prev_kv.mod_revision)
        elif has_prev:
            return WatchEvent(DELETED, key, kv.mod_revision, None, ev.prev_kv.value, ev.prev_kv.mod_revision)
        # etcd could not attach the previous value: it was compacted while this watcher lagged.
        raise GoneError("The resourceVersion for the provided watch is too old.", revision=kv.mod_revision, key=key)

    async def request_progress(self) -> None:
        """Ask etcd for a progress notification on this stream (a BOOKMARK at its current revision)."""
        async with self._writing:
            if self._stopped:
                return
            try:
                await self._call.write(rpc.WatchRequest(progress_request=rpc.WatchProgressRequest()))
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
                pass

    async def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._call.cancel()

    async def __aenter__(self) -> EtcdWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class EtcdKV:
    """The `KV` protocol on an etcd v3 cluster."""

    def __init__(self, endpoints: list[str], *, request_timeout: float = 30.0) -> None:
        if not endpoints:
            raise ValueError("at least one etcd endpoint is required")
        self.endpoints = endpoints
        self.request_timeout = request_timeout
        self._channel: grpc.aio.Channel | None = None
        self._kv: Any = None
        self._watch: Any = None
        # Whether progress requests can be trusted: None until an endpoint has told its version, then False for
        # good as soon as one endpoint is too old (upstream keeps the same three states).
        self._progress_reliable: bool | None = None
        self._version_checks: list[asyncio.Task[None]] = []

    def supports(self, feature: Feature) -> bool:
        return feature == REQUEST_WATCH_PROGRESS and self._progress_reliable is True

    async def _endpoint_version(self, endpoint: str) -> str:
        async with grpc.aio.insecure_channel(endpoint) as channel:
            resp = await rpc.MaintenanceStub(channel).Status(rpc.StatusRequest(), timeout=5)
        return str(resp.version)

    def _record_version(self, endpoint: str, version: str) -> None:
        if progress_requests_reliable(version):
            if self._progress_reliable is None:
                self._progress_reliable = True
        else:
            if self._progress_reliable is not False:
                log.info(
                    "etcd %s is version %s, whose watch progress requests are not reliable (3.4.31+ or 3.5.13+ "
                    "are): consistent reads are served from etcd, not from the watch cache",
                    endpoint,
                    version,
                )
            self._progress_reliable = False

    async def _check_endpoint(self, endpoint: str, first_error: BaseException | None) -> None:
        """Retry an endpoint whose version could not be read at start, with upstream's backoff."""
        delay = 0.01
        error = first_error
        while True:
            log.debug("etcd %s: version not known yet (%s); checking again in %.2fs", endpoint, error, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 15.0)
            try:
                self._record_version(endpoint, await self._endpoint_version(endpoint))
                return
            except grpc.aio.AioRpcError as e:
                error = e

    async def start(self) -> None:
        if self._channel is not None:
            return
        self._channel = grpc.aio.insecure_channel(
            grpc_target(self.endpoints),
            options=[
                ("grpc.max_receive_message_length", _MAX_MESSAGE),
                ("grpc.max_send_message_length", _MAX_MESSAGE),
                ("grpc.keepalive_time_ms", 30_000),
                ("grpc.keepalive_timeout_ms", 10_000),
            ],
        )
        self._kv = rpc.KVStub(self._channel)
        self._watch = rpc.WatchStub(self._channel)
        # Fail now, clearly, rather than on the first request.
        await self.current_revision()
        versions = await asyncio.gather(*(self._endpoint_version(ep) for ep in self.endpoints), return_exceptions=True)
        for ep, version in zip(self.endpoints, versions, strict=True):
            if isinstance(version, str):
                self._record_version(ep, version)
            elif isinstance(version, grpc.aio.AioRpcError):
                self._version_checks.append(asyncio.create_task(self._check_endpoint(ep, version)))
            else:
                raise version

    async def close(self) -> None:
        for task in self._version_checks:
            task.cancel()
        await asyncio.gather(*self._version_checks, return_exceptions=True)
        self._version_checks.clear()
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    async def _call(self, method: str, request: Any, *, revision: int = 0) -> Any:
        if self._kv is None:
            raise StorageUnavailableError("the etcd store is not open")
        try:
            return await getattr(self._kv, method)(request, timeout=self.request_timeout)
        except grpc.aio.AioRpcError as e:
            raise _translate(e, revision=revision) from None

    async def current_revision(self) -> int:
        resp = await self._call("Range", rpc.RangeRequest(key=COMPACT_REV_KEY, count_only=True))
        return int(resp.header.revision)

    async def get(self, key: str) -> KeyValue | None:
        resp = await self._call("Range", rpc.RangeRequest(key=key.encode()))
        if not resp.kvs:
            return None
        kv = resp.kvs[0]
        return KeyValue(key, kv.value, kv.mod_revision)

    async def range(
        self, start: str, end: str, *, revision: int = 0, limit: int = 0, count: bool = False
    ) -> RangeResult:
        req = rpc.RangeRequest(key=start.encode(), range_end=end.encode(), limit=limit, revision=revision)
        try:
            resp = await self._call("Range", req, revision=revision)
        except TooLargeResourceVersionError:
            raise TooLargeResourceVersionError(revision, await self.current_revision()) from None
        kvs = [KeyValue(kv.key.decode(), kv.value, kv.mod_revision) for kv in resp.kvs]
        rev = revision or int(resp.header.revision)
        return RangeResult(kvs, rev, bool(resp.more), int(resp.count) if count else None)

    async def count(self, start: str, end: str) -> int:
        resp = await self._call("Range", rpc.RangeRequest(key=start.encode(), range_end=end.encode(), count_only=True))
        return int(resp.count)

    async def _cas(self, key: str, expected: int, op: Any) -> TxnResult:
        k = key.encode()
        req = rpc.TxnRequest(
            compare=[rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.MOD, key=k, mod_revision=expected)],
            success=[op],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=k))],
        )
        resp = await self._call("Txn", req)
        if resp.succeeded:
            return TxnResult(True, int(resp.header.revision))
        kvs = resp.responses[0].response_range.kvs
        current = KeyValue(key, kvs[0].value, kvs[0].mod_revision) if kvs else None
        return TxnResult(False, int(resp.header.revision), current)

    async def create(self, key: str, value: bytes) -> TxnResult:
        return await self._cas(key, 0, rpc.RequestOp(request_put=rpc.PutRequest(key=key.encode(), value=value)))

    async def update(self, key: str, expected_revision: int, value: bytes) -> TxnResult:
        put = rpc.RequestOp(request_put=rpc.PutRequest(key=key.encode(), value=value))
        return await self._cas(key, expected_revision, put)

    async def delete(self, key: str, expected_revision: int) -> TxnResult:
        op = rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=key.encode()))
        return await self._cas(key, expected_revision, op)

    async def watch(
        self, start: str, end: str, from_revision: int | None, *, progress_notify: bool = False
    ) -> EtcdWatch:
        # One range read checks the start (compacted or in the future) and, for "now", tells what now is.
        check = rpc.RangeRequest(key=COMPACT_REV_KEY, count_only=True, revision=max(from_revision or 0, 1))
        if from_revision is None:
            check = rpc.RangeRequest(key=COMPACT_REV_KEY, count_only=True)
        try:
            resp = await self._call("Range", check, revision=from_revision or 0)
        except GoneError as e:
            raise GoneError(
                "The resourceVersion for the provided watch is too old.",
                revision=e.revision,
                compacted_revision=e.compacted_revision,
            ) from None
        except TooLargeResourceVersionError as e:
            current = await self.current_revision()
            raise TooLargeResourceVersionError(e.revision, current) from None
        if from_revision is None:
            from_revision = int(resp.header.revision)
        if self._watch is None:
            raise StorageUnavailableError("the etcd store is not open")
        call = self._watch.Watch()
        create = rpc.WatchCreateRequest(
            key=start.encode(),
            range_end=end.encode(),
            start_revision=from_revision + 1,
            prev_kv=True,
            progress_notify=progress_notify,
        )
        try:
            await call.write(rpc.WatchRequest(create_request=create))
        except grpc.aio.AioRpcError as e:
            call.cancel()
            raise _translate(e) from None
        return EtcdWatch(call)

    async def compact(self, revision: int) -> None:
        try:
            await self._call("Compact", rpc.CompactionRequest(revision=revision), revision=revision)
        except GoneError:
            pass  # already compacted at or beyond `revision` (another API server's compactor)
        except TooLargeResourceVersionError:
            raise TooLargeResourceVersionError(revision, await self.current_revision()) from None

    async def claim_compaction(self, expected_version: int, revision: int) -> tuple[bool, int, int]:
        req = rpc.TxnRequest(
            compare=[
                rpc.Compare(
                    result=rpc.Compare.EQUAL,
                    target=rpc.Compare.VERSION,
                    key=COMPACT_REV_KEY,
                    version=expected_version,
                )
            ],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=COMPACT_REV_KEY, value=str(revision).encode()))],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=COMPACT_REV_KEY))],
        )
        resp = await self._call("Txn", req)
        if resp.succeeded:
            return True, expected_version + 1, int(resp.header.revision)
        kvs = resp.responses[0].response_range.kvs
        return False, int(kvs[0].version) if kvs else 0, int(resp.header.revision)
