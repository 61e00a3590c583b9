"""The REST client: every call a component or a user's controller makes to an API server, on dict objects.

`RESTClient` is upstream's rest.RESTClient and dynamic client in one: it addresses any resource (built-in by
name, or a `Resource` for custom ones), sends JSON, and decodes JSON. It owns two connection pools: the lean
`HTTPTransport` of `.transport` for requests with a whole answer, and an aiohttp session for watches, whose
answers stream. It also owns a client-side token-bucket rate limiter (client-go's QPS/burst) and retries: a
429, or a 5xx that carries `Retry-After`, is retried after the server's delay for every verb; a connection the
server never accepted is retried for every verb; any other connection failure only for reads. A `Status`
answer becomes the typed error from `pyk8s.api.errors` (`NotFound`, `Conflict`, `Gone`, `Invalid`, …)
carrying that Status.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import aiohttp
import orjson
from multidict import CIMultiDict
from yarl import URL

from .. import __version__
from ..api import errors
from ..api.resources import TABLE, Resource
from .flowcontrol import TokenBucket, retry_delay
from .kubeconfig import ClientConfig
from .transport import ConnectError, HTTPTransport

log = logging.getLogger(__name__)

PatchType = Literal["strategic", "merge", "json", "apply"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "strategic": "application/strategic-merge-patch+json",
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}
ResourceLike = Resource | str
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
# Failures of a connection the server never accepted: the request was not sent, so any verb may be sent again.
# A request path made only of characters yarl leaves as they are.
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9/._~-]*")
_NEVER_SENT = (ConnectError, aiohttp.ClientConnectorError, ConnectionRefusedError)
_T = TypeVar("_T")
_NOT_ALLOWED_TEXT = {401: "Unauthorized", 403: "Forbidden", 404: "the server could not find the requested resource"}


def resolve_resource(name: str) -> Resource:
    """A built-in resource by the names kubectl accepts: plural, singular, kind, short name, or
    `plural.group` / `plural.version.group`, preferring each group's preferred version."""
    found = TABLE.find(name)  # remembered per name there: components resolve names on every call
    if found is None:
        raise errors.NotFound(404, "NotFound", f'the server doesn\'t have a resource type "{name}"')
    return found


def as_resource(resource: ResourceLike) -> Resource:
    """A `Resource` as given, or a built-in one by name (see `resolve_resource`)."""
    return resource if isinstance(resource, Resource) else resolve_resource(resource)


@dataclass(frozen=True)
class WatchEvent:
    """One event of a watch stream: ADDED, MODIFIED, DELETED or BOOKMARK, and the object."""

    type: str
    object: dict[str, Any]


class Watch:
    """An open watch: iterate it (`async for event in watch`) and close it when done. An ERROR event is
    raised as the typed error it carries (a `Gone` when the resourceVersion is too old)."""

    def __init__(self, client: RESTClient, path: str, params: dict[str, str]) -> None:
        self._client = client
        self._path = path
        self._params = params
        self._resp: aiohttp.ClientResponse | None = None
        self._buffer = b""
        self._lines: deque[bytes] = deque()  # complete lines not yet handed out
        self._closed = False

    async def _open(self) -> None:
        # A half-open connection would otherwise leave the watcher waiting forever: nothing may be silent
        # for longer than the watch's own timeout (the server ends it then) plus a margin.
        timeout = self._params.get("timeoutSeconds")
        read_limit = float(timeout) + 30 if timeout else None
        self._resp = await self._client._send(
            "GET", self._path, self._params, None, None, streaming=True, read_timeout=read_limit
        )

    async def __aenter__(self) -> Watch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> WatchEvent:
        if self._closed:
            raise StopAsyncIteration
        if self._resp is None:
            await self._open()
        assert self._resp is not None
        while not self._lines:
            try:
                chunk = await self._resp.content.readany()
            except (TimeoutError, aiohttp.ClientError, ConnectionError) as err:
                self.close()
                raise ConnectionError(f"watch {self._path}: {err}") from err
            if not chunk:
                self.close()
                raise StopAsyncIteration
            self._buffer += chunk
            if b"\n" in self._buffer:
                *lines, self._buffer = self._buffer.split(b"\n")
                self._lines.extend(line for line in lines if line.strip())
        line = self._lines.popleft()
        try:
            raw = orjson.loads(line)
            typ, obj = raw["type"], raw["object"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as err:
            self.close()
            raise errors.InternalError(500, "InternalError", f"watch {self._path}: undecodable event: {err}") from err
        if typ == "ERROR":
            self.close()
            raise errors.from_status(obj if isinstance(obj, dict) else {}, 500)
        return WatchEvent(typ, obj)

    def close(self) -> None:
        self._closed = True
        if self._resp is not None:
            self._resp.close()
            self._resp = None


class RESTClient:
    """An asyncio client of one API server. Use it as `async with RESTClient(config) as client:` or call
    `close()`; it is bound to the event loop it first runs on."""

    def __init__(self, config: ClientConfig, *, max_retries: int = 10) -> None:
        self.config = config
        self.max_retries = max_retries
        self.limiter = TokenBucket(config.qps, config.burst)
        self._session: aiohttp.ClientSession | None = None
        self._ssl = config.ssl_context()
        self.user_agent = config.user_agent or f"pyk8s/{__version__}"
        # What yarl puts before a request's path when it is appended to the server URL (a proxy's prefix, if any).
        self._base_path = URL(config.server + "/x").raw_path[:-2]
        # Requests with a whole answer (every verb, but not watches) go over this pool.
        self.transport = HTTPTransport(
            config.server, self._ssl, server_hostname=config.tls_server_name, timeout=config.timeout
        )

    async def __aenter__(self) -> RESTClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.transport.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # No cap on connections: each watch holds one for its whole life.
            connector = aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else False, limit=0)
            self._session = aiohttp.ClientSession(
                connector=connector, json_serialize=lambda o: orjson.dumps(o).decode()
            )
        return self._session

    # -- paths ------------------------------------------------------------------------------------------

    def namespace_for(self, r: Resource, namespace: str | None, obj: Mapping[str, Any] | None = None) -> str:
        if not r.namespaced:
            return ""
        if namespace:
            return namespace
        if obj is not None:
            ns = (obj.get("metadata") or {}).get("namespace")
            if ns:
                return str(ns)
        return self.config.namespace

    @staticmethod
    def path(r: Resource, namespace: str = "", name: str = "", subresource: str = "") -> str:
        """The URL path of a collection, an object or its subresource."""
        base = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
        if r.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{r.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    # -- the wire ---------------------------------------------------------------------------------------

    def _header_fields(self, content_type: str | None, accept: str = "application/json") -> list[tuple[str, str]]:
        """Every request's header fields but Host and Content-Length; credentials are read per request, as a
        token file may change."""
        fields = [("Accept", accept), ("User-Agent", self.user_agent)]
        fields += self.config.auth_headers().items()
        fields += self.config.impersonation_groups()
        if content_type:
            fields.append(("Content-Type", content_type))
        return fields

    def _headers(self, content_type: str | None, accept: str = "application/json") -> CIMultiDict[str]:
        return CIMultiDict(self._header_fields(content_type, accept))

    async def _retrying(self, method: str, path: str, attempt: Callable[[], Awaitable[_T | _Refusal]]) -> _T:
        """Call `attempt` under the rate limiter until it answers 2xx, retrying as the module says; a refusal
        that is not retried raises its typed error."""
        tries = 0
        while True:
            await self.limiter.wait()
            try:
                answer = await attempt()
            except _NEVER_SENT as err:
                # The server never saw this request: safe to send again whatever the verb.
                if tries >= self.max_retries:
                    raise ConnectionError(f"{method} {path}: {err}") from err
                tries += 1
                await asyncio.sleep(retry_delay(tries))
                continue
            except (TimeoutError, aiohttp.ClientError, ConnectionError) as err:
                if method not in _READS or tries >= self.max_retries:
                    raise ConnectionError(f"{method} {path}: {err}") from err
                tries += 1
                await asyncio.sleep(retry_delay(tries))
                continue
            if not isinstance(answer, _Refusal):
                return answer
            retry_after = _retry_after(answer.retry_after)
            if tries < self.max_retries and (
                answer.status == 429 or (answer.status >= 500 and retry_after is not None)
            ):
                tries += 1
                delay = retry_after if retry_after is not None else retry_delay(tries)
                log.debug("%s %s: %d, retrying in %.2fs", method, path, answer.status, delay)
                await asyncio.sleep(delay)
                continue
            raise _error_from_response(answer.status, answer.body)

    async def _call(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: bytes | None,
        content_type: str | None,
        accept: str = "application/json",
    ) -> bytes:
        """A request with a whole answer, over `transport`, with rate limiting and retries: the 2xx answer's
        body, or the typed error."""
        if not params and _PLAIN_PATH.fullmatch(path) and "/." not in path:
            # Nothing yarl would quote or normalize (the common case: names are DNS labels): skip parsing a URL
            # per request.
            target = self._base_path + path
        else:
            # The request target exactly as aiohttp made it from the same URL and params (yarl's quoting).
            url = URL(self.config.server + path)
            if params:
                url = url.extend_query(params)
            target = url.raw_path_qs

        async def attempt() -> bytes | _Refusal:
            resp = await self.transport.request(method, target, self._header_fields(content_type, accept), body)
            if resp.status < 300:
                return resp.body
            return _Refusal(resp.status, resp.headers.get("retry-after"), resp.body)

        return await self._retrying(method, path, attempt)

    async def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: bytes | None,
        content_type: str | None,
        *,
        streaming: bool = False,
        accept: str = "application/json",
        read_timeout: float | None = None,
    ) -> aiohttp.ClientResponse:
        """A request over the aiohttp session, for answers read as a stream (watches), with rate limiting and
        retries: a 2xx response to read and release, or the typed error."""
        timeout = aiohttp.ClientTimeout(
            total=None if streaming else self.config.timeout, sock_connect=10, sock_read=read_timeout
        )

        async def attempt() -> aiohttp.ClientResponse | _Refusal:
            resp = await self.session.request(
                method, self.config.server + path, params=params, data=body,
                headers=self._headers(content_type, accept), timeout=timeout,
                server_hostname=self.config.tls_server_name if self._ssl is not None else None,
            )  # fmt: skip
            if resp.status < 300:
                return resp
            try:
                raw = await resp.read()
            finally:
                resp.release()
            return _Refusal(resp.status, resp.headers.get("Retry-After"), raw)

        return await self._retrying(method, path, attempt)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Any:
        """One call on any path; returns the decoded JSON answer (or text when it is not JSON)."""
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else orjson.dumps(body)
        ctype = content_type if data is not None else None
        raw = await self._call(method, path, _params(params), data, ctype, accept)
        if not raw:
            return None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw.decode(errors="replace")

    # -- verbs ------------------------------------------------------------------------------------------

    async def get(
        self, resource: ResourceLike, name: str, namespace: str | None = None, *, subresource: str = "", **params: Any
    ) -> dict[str, Any]:
        r = as_resource(resource)
        path = self.path(r, self.namespace_for(r, namespace), name, subresource)
        return await self.request("GET", path, params=params)

    async def list_pages(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        timeout_seconds: int | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Each page of a list, following `continue` tokens."""
        r = as_resource(resource)
        path = self.path(r, namespace or "" if r.namespaced else "")
        params: dict[str, Any] = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "limit": limit,
            "resourceVersion": resource_version,
            "resourceVersionMatch": resource_version_match,
            "timeoutSeconds": timeout_seconds,
        }
        while True:
            page = await self.request("GET", path, params=params)
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            # Later pages come from the snapshot the token names; a resourceVersion with it is an error.
            params = {**params, "continue": token, "resourceVersion": None, "resourceVersionMatch": None}

    async def list(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> dict[str, Any]:
        """The whole list (all pages of `limit` objects, one snapshot), as one List object. `namespace=None`
        lists every namespace."""
        result: dict[str, Any] | None = None
        async for page in self.list_pages(
            resource, namespace, label_selector=label_selector, field_selector=field_selector, limit=limit,
            resource_version=resource_version, resource_version_match=resource_version_match,
        ):  # fmt: skip
            if result is None:
                result = page
                result["items"] = list(page.get("items") or [])
            else:
                result["items"].extend(page.get("items") or [])
        assert result is not None
        meta = result.setdefault("metadata", {})
        meta.pop("continue", None)
        meta.pop("remainingItemCount", None)
        return result

    def watch(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_watch_bookmarks: bool = False,
        timeout_seconds: int | None = None,
        send_initial_events: bool | None = None,
        resource_version_match: str | None = None,
    ) -> Watch:
        """A watch stream from `resource_version` (None or "" means: the current state as ADDED events first,
        then changes; with `send_initial_events` and `resource_version_match="NotOlderThan"`, a WatchList). The
        stream opens on the first iteration."""
        r = as_resource(resource)
        params = _params(
            {
                "watch": "true",
                "resourceVersion": resource_version,
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "allowWatchBookmarks": "true" if allow_watch_bookmarks else None,
                "timeoutSeconds": timeout_seconds,
                "sendInitialEvents": None if send_initial_events is None else str(send_initial_events).lower(),
                "resourceVersionMatch": resource_version_match,
            }
        )
        return Watch(self, self.path(r, namespace or "" if r.namespaced else ""), params)

    async def create(
        self,
        resource: ResourceLike,
        obj: Mapping[str, Any],
        namespace: str | None = None,
        *,
        name: str = "",
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> dict[str, Any]:
        """POST an object (or a subresource such as `pods/<name>/binding` with `name` and `subresource`)."""
        r = as_resource(resource)
        path = self.path(r, self.namespace_for(r, namespace, obj), name, subresource)
        params = _write_params(dry_run, field_manager, field_validation)
        return await self.request("POST", path, params=params, body=obj)

    async def update(
        self,
        resource: ResourceLike,
        obj: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> dict[str, Any]:
        """PUT an object; its metadata.resourceVersion makes this a compare-and-swap (409 Conflict if stale)."""
        r = as_resource(resource)
        name = str((obj.get("metadata") or {}).get("name") or "")
        if not name:
            raise errors.invalid_object(r.kind, "", [errors.required("metadata.name", "name is required")], r.group)
        path = self.path(r, self.namespace_for(r, namespace, obj), name, subresource)
        params = _write_params(dry_run, field_manager, field_validation)
        return await self.request("PUT", path, params=params, body=obj)

    async def update_status(
        self, resource: ResourceLike, obj: Mapping[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        return await self.update(resource, obj, namespace, subresource="status")

    async def patch(
        self,
        resource: ResourceLike,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "strategic",
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
        force: bool | None = None,
    ) -> dict[str, Any]:
        """PATCH with a strategic merge (default), merge, JSON or apply patch."""
        r = as_resource(resource)
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch type {patch_type!r}; one of {', '.join(PATCH_CONTENT_TYPES)}")
        path = self.path(r, self.namespace_for(r, namespace), name, subresource)
        params = _write_params(dry_run, field_manager, field_validation)
        if force is not None:
            params["force"] = str(force).lower()
        body = patch if isinstance(patch, bytes) else orjson.dumps(patch)
        return await self.request("PATCH", path, params=params, body=body, content_type=content_type)

    async def delete(
        self,
        resource: ResourceLike,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """DELETE; answers the deleted object (or the object marked for deletion) or a Success Status."""
        r = as_resource(resource)
        path = self.path(r, self.namespace_for(r, namespace), name)
        body = _delete_options(propagation_policy, grace_period_seconds, preconditions, dry_run)
        return await self.request("DELETE", path, body=body)

    async def delete_collection(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        r = as_resource(resource)
        path = self.path(r, self.namespace_for(r, namespace))
        params = {"labelSelector": label_selector, "fieldSelector": field_selector}
        body = _delete_options(propagation_policy, grace_period_seconds, None, dry_run)
        return await self.request("DELETE", path, params=params, body=body)

    async def server_version(self) -> dict[str, Any]:
        return await self.request("GET", "/version")


def _params(params: Mapping[str, Any] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in (params or {}).items():
        if v is None or v == "":
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def _write_params(dry_run: bool, field_manager: str | None, field_validation: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    if dry_run:
        out["dryRun"] = "All"
    if field_manager:
        out["fieldManager"] = field_manager
    if field_validation:
        out["fieldValidation"] = field_validation
    return out


def _delete_options(
    propagation: str | None, grace: int | None, preconditions: Mapping[str, str] | None, dry_run: bool
) -> dict[str, Any] | None:
    opts: dict[str, Any] = {}
    if propagation:
        opts["propagationPolicy"] = propagation
    if grace is not None:
        opts["gracePeriodSeconds"] = grace
    if preconditions:
        opts["preconditions"] = dict(preconditions)
    if dry_run:
        opts["dryRun"] = ["All"]
    if not opts:
        return None
    return {"kind": "DeleteOptions", "apiVersion": "v1", **opts}


@dataclass(frozen=True, slots=True)
class _Refusal:
    """A non-2xx answer: its status, Retry-After field and body."""

    status: int
    retry_after: str | None
    body: bytes


def _retry_after(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        return max(0.0, float(int(raw)))
    except ValueError:
        return None


def _error_from_response(code: int, raw: bytes) -> errors.StatusError:
    try:
        body = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return errors.from_status(body, code)
    text = raw.decode(errors="replace").strip() if raw else ""
    message = text or _NOT_ALLOWED_TEXT.get(code) or f"the server responded with HTTP {code}"
    return errors.from_status({"code": code, "message": message}, code)
