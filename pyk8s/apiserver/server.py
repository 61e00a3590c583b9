"""`APIServer`: kube-apiserver's job in one object with `async run()`.

It opens storage (SQLite in the data directory, or etcd), starts a watch cache per resource, makes sure the
system namespaces exist, and serves HTTPS (and plain HTTP only on an explicit loopback `--insecure-port`)
through the handler chain in `filters`. On first start it creates the PKI and writes `admin.kubeconfig`.
Connections are admitted as `connections` describes: a deadline for the TLS handshake and the request header,
and a bound on connections that have not authenticated.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from ..aggregator.apiserver import APIAggregator
from ..aggregator.options import AggregatorOptions
from ..api import errors
from ..api.meta import Object
from ..api.resources import TABLE, ResourceTable
from ..apiextensions.customresource_handler import CustomResourceHandler
from ..apiextensions.finalizer import CRDFinalizer
from ..apiextensions.naming_controller import NamingController
from ..file_modes import ensure_private_dir
from ..rlimit import raise_nofile_limit
from ..storage import StorageError, Store, open_storage
from ..storage.cacher import Cacher
from ..storage.compactor import DEFAULT_COMPACTION_INTERVAL
from . import authz, discovery, openapi_v2_proto, openid_metadata, printers, resource_metrics  # noqa: F401 -- printers register their Table columns
from .admission.plugins import AdmissionOptions, build_chain
from .admission.priority import ensure_system_priority_classes
from .audit import Auditor, LogBackend, LogOptions, UnionBackend, WebhookBackend, load_policy
from .audit import WebhookOptions as AuditWebhookOptions
from .authn import Union, UserInfo
from .authn.options import Authentication, AuthenticationOptions
from .authn.request_header import RequestHeaderAuthenticator, read_cas
from .authz.rbac import RBACAuthorizer
from .authz.webhook import WebhookAuthorizer, WebhookOptions
from .certs import ADMIN_GROUP, ADMIN_USER, PKI, ensure_pki, serving_names, write_kubeconfig
from .connections import IDLE_TIMEOUT, READ_HEADER_TIMEOUT, GuardedSite, PendingConnections, default_max_pending
from .encoding import respond, status_response
from .filters import ChainConfig, build_middlewares, inflight_limits
from .handlers import ResourceHandlers
from .health import HealthChecks, version_info
from .inflight import InflightLimit
from .informers import cached
from .metrics import Gauges, Metrics
from .negotiation import Output, choose_output, parse_media_types
from .openapi import OpenAPI
from .registry import strategy_for
from .registry.rest import Context, RESTStore
from .registry.strategy import Strategy
from .service_resolver import ServiceResolver, build_resolver
from .storage_migration import migrate_stored_form
from .tables import check_include_object
from .watch import WatchMetrics, WatchServer

log = logging.getLogger("pyk8s.apiserver")

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _env_number(name: str, default: float) -> float:
    """A default that a test may override through the environment of a `pyk8s apiserver` process it starts."""
    raw = os.environ.get(name)
    return float(raw) if raw else default


@dataclass
class APIServerOptions:
    data_dir: Path
    etcd_servers: list[str] = field(default_factory=list)
    bind_address: str = "127.0.0.1"
    secure_port: int = 6443
    insecure_port: int = 0  # 0: no plain HTTP
    insecure_bind_address: str = "127.0.0.1"
    tls_sans: list[str] = field(default_factory=list)
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    http2: bool = True  # serve HTTP/2 (ALPN h2) beside HTTP/1.1 (upstream: unless --disable-http2-serving)
    request_timeout: float = 60.0
    min_request_timeout: int = 1800
    compaction_interval: float = DEFAULT_COMPACTION_INTERVAL
    sqlite_synchronous: str = "NORMAL"
    watch_cache_history: int = 100_000
    bookmark_interval: float = 60.0
    write_kubeconfig: bool = True
    # How long a connection may take over its TLS handshake, and then over its first request header (upstream:
    # ReadHeaderTimeout). Upstream has no flag for it; PYK8S_READ_HEADER_TIMEOUT exists for tests.
    read_header_timeout: float = field(
        default_factory=lambda: _env_number("PYK8S_READ_HEADER_TIMEOUT", READ_HEADER_TIMEOUT)
    )
    # How many connections may be open before authenticating (0: half the open-file limit, see connections).
    # PYK8S_MAX_PENDING_CONNECTIONS exists for tests.
    max_pending_connections: int = field(default_factory=lambda: int(_env_number("PYK8S_MAX_PENDING_CONNECTIONS", 0)))
    admission: AdmissionOptions = field(default_factory=AdmissionOptions)
    aggregator: AggregatorOptions = field(default_factory=AggregatorOptions)
    # --audit-policy-file and the log backend (--audit-log-*): auditing is on when both are given
    audit_policy_file: str = ""
    audit_log: LogOptions = field(default_factory=LogOptions)
    audit_webhook: AuditWebhookOptions = field(default_factory=AuditWebhookOptions)  # --audit-webhook-*
    # --service-account-*, --api-audiences, --token-auth-file, --enable-bootstrap-token-auth, --anonymous-auth
    authentication: AuthenticationOptions = field(default_factory=AuthenticationOptions)
    # --authorization-mode, in order (system:masters is always allowed first, as upstream)
    authorization_modes: tuple[str, ...] = authz.DEFAULT_MODES
    # --authorization-webhook-*: the Webhook mode's kubeconfig file, review version and decision caches
    authorization_webhook: WebhookOptions = field(default_factory=WebhookOptions)

    @property
    def storage_url(self) -> str:
        if self.etcd_servers:
            return "etcd://" + ",".join(s.removeprefix("http://").removeprefix("https://") for s in self.etcd_servers)
        return f"sqlite://{self.data_dir}?synchronous={self.sqlite_synchronous}"


class APIServer:
    def __init__(self, options: APIServerOptions, table: ResourceTable = TABLE) -> None:
        self.options = options
        self.table = table
        self.store: Store | None = None
        self.stores: dict[tuple[str, str], RESTStore] = {}
        self.cachers: list[Cacher] = []
        self.pki: PKI | None = None
        self.metrics = Metrics()
        self.watch_metrics = WatchMetrics()
        self.handlers: ResourceHandlers | None = None
        self.custom_resources: CustomResourceHandler | None = None  # what the CRDs define (apiextensions)
        self.aggregator: APIAggregator | None = None  # APIServices: proxying, availability, merged discovery
        self.service_resolver: ServiceResolver | None = None  # where Services called out to are reached
        self.authorizer: authz.Union | None = None  # --authorization-mode's authorizers (built in start)
        self.auditor: Auditor | None = None  # the audit policy and log, when auditing is on
        self.rbac: RBACAuthorizer | None = None  # the RBAC mode's index, when RBAC is a mode
        self.authentication: Authentication | None = None  # the authenticators and the token signer (_serve)
        self.openid_metadata: openid_metadata.OpenIDMetadata | None = None  # the issuer's discovery documents
        self._tasks: list[asyncio.Task[None]] = []
        self.resource_metrics: resource_metrics.ResourceMetrics | None = None
        # Discovery lists the metrics.k8s.io group too, which has no storage (see resource_metrics).
        self.discovery_table = ResourceTable([*table.resources, *resource_metrics.RESOURCES])
        self.watches = WatchServer(self.watch_metrics, options.min_request_timeout)
        self._runners: list[web.ServerRunner] = []
        # The bound on pending connections is set again in start(), once the file limit has been raised.
        self.connections = PendingConnections(
            max_pending=options.max_pending_connections or default_max_pending(1024),
            header_timeout=options.read_header_timeout,
        )
        self.secure_port = 0
        self.insecure_port = 0
        self._stopped = asyncio.Event()
        self._discovery: dict[str, bytes] = {}
        self._limits: dict[str, InflightLimit] = {}  # set in start(), from the chain's configuration
        self.openapi = OpenAPI(table)
        self.metrics.add_gauges(
            Gauges(
                lambda: {c.prefix.removeprefix("/registry/").rstrip("/"): c.count() for c in self.cachers},
                lambda: {kind: limit.in_use for kind, limit in self._limits.items()},
                lambda: {kind: limit.waiting for kind, limit in self._limits.items()},
                lambda: self.watch_metrics.open_watches,
                lambda: self.watch_metrics.events_sent,
            )
        )

    # -- addresses -------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host = self.options.bind_address if self.options.bind_address not in ("0.0.0.0", "::") else "127.0.0.1"
        return f"https://{host}:{self.secure_port}"

    @property
    def insecure_url(self) -> str:
        return f"http://{self.options.insecure_bind_address}:{self.insecure_port}" if self.insecure_port else ""

    @property
    def kubeconfig_path(self) -> Path:
        return self.options.data_dir / "admin.kubeconfig"

    # -- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> None:
        opts = self.options
        nofile = raise_nofile_limit()  # as Go's runtime does for kube-apiserver: see rlimit
        if not opts.max_pending_connections:
            self.connections.max_pending = default_max_pending(nofile)
        ensure_private_dir(opts.data_dir)  # 0700: it holds the CA key and the admin's credentials
        self.pki = ensure_pki(opts.data_dir, serving_names(opts.bind_address, opts.tls_sans))
        self.store = await open_storage(opts.storage_url, compaction_interval=opts.compaction_interval)
        try:
            await self._build_registry()
            # Objects an earlier pyk8s stored as clients sent them: into upstream's form, once per store.
            await migrate_stored_form(self.store, self.stores.values())
            await self._start_apiextensions()
            await self._ensure_system_namespaces()
            await self._ensure_rbac_policy()
            await ensure_system_priority_classes(
                self.rest("scheduling.k8s.io/v1", "priorityclasses"),
                Context(UserInfo(ADMIN_USER, groups=(ADMIN_GROUP,))),
            )
            await self._start_aggregator()
            await self._start_authorization()
            self._start_audit()
            await self._serve()
            await self._reconcile_kubernetes_service()
        except BaseException:
            await self.stop()
            raise
        if opts.write_kubeconfig:
            write_kubeconfig(self.kubeconfig_path, self.url, self.pki)
        log.info("serving on %s", self.url)

    async def run(self) -> None:
        await self.start()
        try:
            await self._stopped.wait()
        finally:
            await self.stop()

    async def stop(self) -> None:
        # Stop accepting, then end every watch (its stream closes, as kube-apiserver's do at shutdown), then
        # let the requests in flight finish: open watches would otherwise hold the shutdown for a minute.
        for runner in self._runners:
            for site in list(runner.sites):
                await site.stop()
        self.connections.abort_all()
        if self.handlers is not None:
            self.handlers.subresources.stopping.set()  # open `pods/log` streams end, as the watches do
        # Cancelled again until they end, as the watch caches' tasks are (see Cacher.stop): a dropped cancel must
        # not hold the shutdown. A second apart, so that a component's own cleanup on cancel is not cut short.
        pending = set(self._tasks)
        while pending:
            for t in pending:
                t.cancel()
            _, pending = await asyncio.wait(pending, timeout=1.0)
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for c in list(self.cachers):
            await c.stop()
        self.cachers.clear()
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
        if self.auditor is not None:
            await self.auditor.shutdown()  # the webhook's last batch is delivered
            self.auditor = None
        if self.store is not None:
            await self.store.close()
            self.store = None
        self._stopped.set()

    # -- registry --------------------------------------------------------------------------------------

    async def _build_registry(self) -> None:
        assert self.store is not None
        store = self.store
        namespaces: RESTStore | None = None

        async def get_namespace(name: str) -> Object | None:
            assert namespaces is not None
            entry = namespaces.cacher.get(namespaces.key("", name)) if namespaces.cacher.ready else None
            if entry is not None:
                return entry.obj
            try:
                return await store.get(namespaces.key("", name))
            except StorageError:
                return None

        def list_cached(group_version: str, plural: str) -> list[Object]:
            rest = self.stores.get((group_version, plural))
            if rest is None or not rest.cacher.ready:
                return []
            entries, _ = rest.cacher.list(rest.resource.collection_key(""))
            return [en.obj for en in entries]

        admission = build_chain(self.options.admission, get_namespace, list_cached, self)
        for r in self.table.stored():
            strategy = strategy_for(r)
            cacher = Cacher(
                store,
                r.key_prefix,
                _attributes_of(strategy),
                history=self.options.watch_cache_history,
                bookmark_interval=self.options.bookmark_interval,
                trigger=strategy.trigger_field,
            )
            rest = RESTStore(r, strategy, store, cacher, admission)
            self.stores[(r.group_version, r.plural)] = rest
            self.cachers.append(cacher)
            if r.group == "" and r.plural == "namespaces":
                namespaces = rest
        for c in self.cachers:
            store.compaction_listeners.append(c.trim)
        await asyncio.gather(*(c.start() for c in self.cachers))
        await asyncio.gather(*(c.wait_ready(60) for c in self.cachers))
        services, endpoints = self.rest("v1", "services"), self.rest("v1", "endpoints")
        self.service_resolver = build_resolver(
            lambda ns, name: cached(services, ns, name), lambda ns, name: cached(endpoints, ns, name),
            self.options.aggregator.enable_aggregator_routing, lambda: self.url,
        )  # fmt: skip
        self.custom_resources = CustomResourceHandler(
            self.rest("apiextensions.k8s.io/v1", "customresourcedefinitions"), store, admission, self._cacher_for,
            self._custom_resources_changed, self.service_resolver.resolve,
        )  # fmt: skip
        self.handlers = ResourceHandlers(self.table, self.stores, self.custom_resources.resolve)
        from .registry import authorization as access_reviews

        access_reviews.register(self.handlers, lambda: self.authorizer)  # SubjectAccessReview and its kin
        self.resource_metrics = resource_metrics.ResourceMetrics(self.rest("v1", "pods"), self.rest("v1", "nodes"))

    def _cacher_for(self, prefix: str, attributes: Callable[[Object], tuple[dict[str, str], dict[str, str]]]) -> Cacher:
        """A watch cache for a custom resource, kept with the others (compaction, metrics, shutdown)."""
        assert self.store is not None
        cacher = Cacher(self.store, prefix, attributes, history=self.options.watch_cache_history,
                        bookmark_interval=self.options.bookmark_interval)  # fmt: skip
        self.cachers.append(cacher)
        self.store.compaction_listeners.append(cacher.trim)
        original_stop = cacher.stop

        async def stop() -> None:
            if cacher in self.cachers:
                self.cachers.remove(cacher)
            if self.store is not None and cacher.trim in self.store.compaction_listeners:
                self.store.compaction_listeners.remove(cacher.trim)
            await original_stop()

        cacher.stop = stop  # type: ignore[method-assign]
        return cacher

    def _custom_resources_changed(self) -> None:
        """The CRDs serve other resources now: discovery is rebuilt."""
        assert self.custom_resources is not None
        custom = self.custom_resources.resources()
        self.discovery_table = ResourceTable([*self.table.resources, *resource_metrics.RESOURCES, *custom])
        self._discovery.clear()
        self.openapi = OpenAPI(ResourceTable([*self.table.resources, *custom]),
                               *self.custom_resources.openapi_definitions())  # fmt: skip
        if self.aggregator is not None:
            self.aggregator.custom_resources_changed()

    async def _start_aggregator(self) -> None:
        """The local APIServices and the authentication ConfigMap in place, then the aggregator's controllers."""
        assert self.pki is not None
        assert self.service_resolver is not None
        self.aggregator = APIAggregator(self.rest, self.pki, self.options.aggregator, lambda: self.discovery_table,
                                        self.service_resolver)  # fmt: skip
        await self.aggregator.start()
        self._tasks.append(asyncio.create_task(self.aggregator.run()))

    def _start_audit(self) -> None:
        """The auditor, when a policy and a backend (the log, the webhook or both) are given (upstream: no
        backend, no auditing)."""
        opts = self.options
        backends: list[LogBackend | WebhookBackend] = []
        if opts.audit_log.path:
            backends.append(LogBackend(opts.audit_log))
        if opts.audit_webhook.config_file:
            backends.append(WebhookBackend(opts.audit_webhook))
        if not opts.audit_policy_file or not backends:
            if opts.audit_policy_file or backends:
                log.warning("auditing is off: it needs --audit-policy-file and --audit-log-path or "
                            "--audit-webhook-config-file")  # fmt: skip
            return
        backend = backends[0] if len(backends) == 1 else UnionBackend(*backends)
        self.auditor = Auditor(load_policy(opts.audit_policy_file), backend)

    async def _start_authorization(self) -> None:
        """The authorizers `--authorization-mode` names, in order, behind the system:masters one; each that
        keeps an index of the cluster's objects has it built before the first request is served."""
        from .authz.rbac import install_escalation_checks

        self.rbac = None
        authorizers: list[authz.Authorizer] = [authz.PrivilegedGroups(authz.SYSTEM_PRIVILEGED_GROUP)]
        for mode in self.options.authorization_modes:
            if mode == authz.MODE_ALWAYS_ALLOW:
                authorizers.append(authz.AlwaysAllow())
            elif mode == authz.MODE_ALWAYS_DENY:
                authorizers.append(authz.AlwaysDeny())
            elif mode == authz.MODE_RBAC:
                self.rbac = RBACAuthorizer(self.rest)
                await self.rbac.start()
                self._tasks.append(asyncio.create_task(self.rbac.run()))
                authorizers.append(self.rbac)
            elif mode == authz.MODE_NODE:
                from .authz.node import NodeAuthorizer

                node = NodeAuthorizer(self.rest)
                await node.start()
                self._tasks.append(asyncio.create_task(node.run()))
                authorizers.append(node)
            elif mode == authz.MODE_WEBHOOK:
                webhook = WebhookAuthorizer.from_options(self.options.authorization_webhook)
                self._tasks.append(asyncio.create_task(webhook.run()))  # closes its connections at shutdown
                authorizers.append(webhook)
            else:
                raise ValueError(f"authorization mode {mode} is not implemented by pyk8s yet")
        self.authorizer = authz.Union(authorizers)
        # Escalation checks guard roles and bindings whatever the modes, as upstream's RBAC storage does, with
        # `escalate` and `bind` asked of the whole chain. Under AlwaysAllow those are always granted, so the
        # rule index they would fall back on is never read and need not be kept.
        resolver = self.rbac or RBACAuthorizer(self.rest)
        if self.rbac is None and authz.MODE_ALWAYS_ALLOW not in self.options.authorization_modes:
            await resolver.start()
            self._tasks.append(asyncio.create_task(resolver.run()))
        install_escalation_checks(self.rest, self.authorizer, resolver)

    async def _start_apiextensions(self) -> None:
        """Serve the CRDs stored now, then keep their names, conditions, handlers and cleanup going."""
        assert self.custom_resources is not None
        crds = self.rest("apiextensions.k8s.io/v1", "customresourcedefinitions")
        await self.custom_resources.start()
        for component in (self.custom_resources, NamingController(crds), CRDFinalizer(crds, self.custom_resources)):
            self._tasks.append(asyncio.create_task(component.run()))

    def rest(self, group_version: str, plural: str) -> RESTStore:
        return self.stores[(group_version, plural)]

    async def _ensure_rbac_policy(self) -> None:
        """The default roles and bindings, reconciled before serving whatever the authorization mode (upstream's
        `rbac/bootstrap-roles` post-start hook runs whenever the RBAC API is served)."""
        from .authz.rbac.ensure import ensure_rbac_policy

        # No field manager: recording managedFields would make the first start's ~120 creates five times slower.
        await ensure_rbac_policy(self.rest, Context(UserInfo(ADMIN_USER, groups=(ADMIN_GROUP,))))

    async def _ensure_system_namespaces(self) -> None:
        ns = self.rest("v1", "namespaces")
        system = Context(UserInfo(ADMIN_USER, groups=(ADMIN_GROUP,)))
        for name in SYSTEM_NAMESPACES:
            try:
                await ns.create("", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, system)
            except errors.StatusError as err:
                if err.code != 409:
                    raise

    async def _reconcile_kubernetes_service(self) -> None:
        from .kubernetes_service import reconcile

        stores = {
            "services": self.rest("v1", "services"),
            "endpoints": self.rest("v1", "endpoints"),
            "endpointslices": self.rest("discovery.k8s.io/v1", "endpointslices"),
        }
        address = urlsplit(self.url).hostname or "127.0.0.1"  # where clients reach this server
        await reconcile(stores, address, self.secure_port, Context(UserInfo(ADMIN_USER, groups=(ADMIN_GROUP,))))

    # -- serving ---------------------------------------------------------------------------------------

    def _handler(self, authenticator: Union, anonymous_is_admin: bool) -> web.Server:
        """One listener's HTTP server: the filter chain around `dispatch`, straight on aiohttp's low-level
        server. Every path goes to `dispatch`, so aiohttp's Application (its router, its middleware wrapping
        and per-request app lookups, some 5% of a request's CPU) would only add cost."""
        opts = self.options
        assert self.authorizer is not None
        cfg = ChainConfig(
            authenticator=authenticator,
            authorizer=self.authorizer,
            auditor=self.auditor,
            anonymous_is_admin=anonymous_is_admin,
            max_requests_inflight=opts.max_requests_inflight,
            max_mutating_requests_inflight=opts.max_mutating_requests_inflight,
            request_timeout=opts.request_timeout,
            on_request_done=self._request_done,
        )
        self._limits = inflight_limits(cfg)
        (chain,) = build_middlewares(cfg, self._limits)
        dispatch = self.dispatch

        async def handle(request: web.BaseRequest) -> web.StreamResponse:
            # The chain and the handlers use only what every request has (no router match, no app).
            return await chain(request, dispatch)  # type: ignore[no-any-return]

        # Bodies are read by encoding.read_body, with upstream's limit, never by request.read() (client_max_size).
        return web.Server(handle, access_log=None, keepalive_timeout=IDLE_TIMEOUT)

    async def _serve(self) -> None:
        assert self.pki is not None
        opts = self.options
        auth = self._start_authentication()
        secure = auth.request_authenticator
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.pki.serving_cert, self.pki.serving_key)
        ctx.load_verify_locations(self.pki.ca_cert)
        if auth.front_proxy is not None:  # a front proxy's certificate passes the handshake too
            ctx.load_verify_locations(self.options.aggregator.requestheader_ca(self.pki))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.set_alpn_protocols(["h2", "http/1.1"] if opts.http2 else ["http/1.1"])
        self.secure_port = await self._listen(self._handler(secure, False), opts.bind_address, opts.secure_port, ctx)
        if opts.insecure_port:
            if opts.insecure_bind_address not in ("127.0.0.1", "::1", "localhost"):
                raise ValueError("--insecure-port is only allowed on a loopback address")
            log.warning(
                "serving plain HTTP on %s:%s: every request there is the cluster admin (kubectl sends no credentials "
                "over HTTP)",
                opts.insecure_bind_address,
                opts.insecure_port,
            )
            server = self._handler(Union([auth.bearer]), True)
            self.insecure_port = await self._listen(server, opts.insecure_bind_address, opts.insecure_port, None)
        self.openid_metadata = openid_metadata.build(auth.issuers[0], opts.authentication.service_account_jwks_uri,
                                                     urlsplit(self.url).netloc, auth.keys)  # fmt: skip

    def _start_authentication(self) -> Authentication:
        """The authenticators the flags ask for, and what serves with their keys: the TokenRequest API,
        TokenReview and SelfSubjectReview, and the legacy token tracking ConfigMap."""
        from .authn.legacy_token_tracking import LegacyTokenTrackingController
        from .registry import authentication as authentication_registry
        from .registry.serviceaccount_token import TokenREST

        assert self.pki is not None and self.handlers is not None
        admin = UserInfo(ADMIN_USER, groups=(ADMIN_GROUP,))
        auth = Authentication(
            self.options.authentication, self.rest, self.pki.dir, {self.pki.admin_token: admin},
            front_proxy=self._front_proxy(), client_cas=read_cas(self.pki.ca_cert),
        )  # fmt: skip
        self.authentication = auth
        if auth.token_webhook is not None:  # its connections are closed at shutdown
            self._tasks.append(asyncio.create_task(auth.token_webhook.run()))
        if auth.oidc is not None:  # discovers the OpenID provider in the background
            self._tasks.append(asyncio.create_task(auth.oidc.run()))
        self.handlers.subresources.token_request = TokenREST(self.rest, auth).create
        authentication_registry.install(self.handlers.create_only, auth)
        apiserver = UserInfo("system:apiserver", groups=(ADMIN_GROUP,))
        self._tasks.append(asyncio.create_task(LegacyTokenTrackingController(self.rest, apiserver).run()))
        return auth

    def _front_proxy(self) -> RequestHeaderAuthenticator | None:
        """The request-header authenticator the aggregator's flags describe (kube-apiserver's --requestheader-*
        flags configure both), None without a request-header CA."""
        assert self.pki is not None
        agg = self.options.aggregator
        ca = agg.requestheader_ca(self.pki)
        if not ca.exists():
            return None
        return RequestHeaderAuthenticator(
            read_cas(ca), agg.requestheader_allowed_names, agg.requestheader_username_headers,
            agg.requestheader_group_headers, agg.requestheader_extra_headers_prefix,
        )  # fmt: skip

    async def _listen(self, server: web.Server, host: str, port: int, ssl_ctx: ssl.SSLContext | None) -> int:
        runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=10)
        await runner.setup()
        self._runners.append(runner)
        site = GuardedSite(runner, host, port, self.connections, ssl_context=ssl_ctx, backlog=4096)
        await site.start()
        return site.port

    def _request_done(self, request: web.Request, code: int, seconds: float) -> None:
        """After every request: metrics, and a connection that has not authenticated is not kept alive."""
        self.metrics.observe(request, code, seconds)
        user: UserInfo | None = request.get("user")
        if self.connections.request_seen(request.protocol, user is not None and not user.anonymous):
            request.protocol.close()

    # -- dispatch --------------------------------------------------------------------------------------

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        # An authenticated request ends its connection's pending state now, not when it ends (a watch is long).
        self.connections.request_seen(request.protocol, not request["user"].anonymous)
        info = request["info"]
        if self.aggregator is not None and self.aggregator.proxies(info):
            return await self.aggregator.proxy(request)  # an extension API server's group version
        if info.is_resource_request and info.api_group == resource_metrics.GROUP:
            assert self.resource_metrics is not None
            return await self.resource_metrics.serve(request, info)
        if info.is_resource_request:
            assert self.handlers is not None
            ctx = Context(request["user"])
            if info.verb == "watch":
                r = self.handlers.resolve(info)
                out = choose_output(request.headers.get("Accept"), protobuf=r.protobuf)
                table = out.transform == "Table"
                include = check_include_object(request.query.get("includeObject", "")) if table else ""
                return await self.watches.serve(request, r, table, include, out.version, out.media)
            return await self.handlers.serve(request, info, ctx)
        return await self.non_resource(request)

    async def non_resource(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_supported("", request.method)
        if path == "/version":
            return respond(version_info(), Output())
        parts = path.strip("/").split("/")
        if parts[0] in ("healthz", "livez", "readyz"):
            return await self.health.serve(request, parts[0], "/".join(parts[1:]))
        if parts[0] == "openapi":
            return self._openapi(request, parts[1:])
        if path == "/metrics":
            return web.Response(body=self.metrics.exposition(), content_type="text/plain", charset="utf-8")
        if parts[0] in (".well-known", "openid") and self.openid_metadata is not None:
            doc = self.openid_metadata.serve(path)
            if doc is not None:
                return doc
        if self.aggregator is not None and parts[0] == "apis" and len(parts) <= 2:
            merged = self.aggregator.discovery(request, path)  # with the extension servers' groups
            if merged is not None:
                return merged
        if path in ("/api", "/apis"):
            return self._discovery_root(request, legacy=path == "/api")
        if parts[0] == "apis" and len(parts) == 2:
            body = discovery.api_group(self.discovery_table, parts[1])
            if body is not None:
                return web.Response(body=body, content_type="application/json")
        if (parts[0] == "api" and len(parts) == 2) or (parts[0] == "apis" and len(parts) == 3):
            group = "" if parts[0] == "api" else parts[1]
            body = discovery.api_resource_list(self.discovery_table, group, parts[-1])
            if body is not None:
                return web.Response(body=body, content_type="application/json")
        if path == "/":
            t = self.discovery_table
            openid = {openid_metadata.OPENID_CONFIG_PATH, openid_metadata.JWKS_PATH} if self.openid_metadata else set()
            paths = sorted({"/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/metrics", "/version"}
                           | openid
                           | {f"/apis/{g}" for g in t.groups() if g}
                           | {f"/apis/{g}/{v}" for g in t.groups() if g for v in t.versions[g]})  # fmt: skip
            return respond({"paths": paths}, Output())
        return status_response(errors.path_not_found())

    def _openapi(self, request: web.Request, parts: list[str]) -> web.Response:
        accept = request.headers.get("Accept", "")
        if parts == ["v2"]:
            return self._openapi_v2(request, accept)
        if parts == ["v3"]:
            body = self.openapi.v3_index
        elif parts and parts[0] == "v3":
            doc = self.openapi.v3_documents.get("/".join(parts[1:]))
            if doc is None:
                return status_response(errors.path_not_found())
            body = doc
        else:
            return status_response(errors.path_not_found())
        resp = web.Response(body=body, content_type="application/json")
        if "hash" in request.query:
            resp.headers["Cache-Control"] = "public, immutable"
        return resp

    def _openapi_v2(self, request: web.Request, accept: str) -> web.Response:
        """JSON or gnostic protobuf, whichever the Accept list (by q-value) names first; an ETag shared by both,
        and 304 for a client that has it (upstream: kube-openapi's handler)."""
        media = ""
        for m in parse_media_types(accept or "*/*"):
            if m.type in ("application/json", "*/*", "application/*"):
                media = "application/json"
            elif m.type in (openapi_v2_proto.PROTO_V2.lower(), openapi_v2_proto.PROTO_V2_REPLY.lower()):
                media = openapi_v2_proto.PROTO_V2_REPLY
            if media:
                break
        if not media:
            raise errors.not_acceptable(
                "only the following media types are accepted: application/json, " + openapi_v2_proto.PROTO_V2
            )
        etag = self.openapi.v2_etag
        headers = {"Vary": "Accept", "ETag": etag}
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers=headers)
        body = self.openapi.v2_document if media == "application/json" else self.openapi.v2_proto
        return web.Response(body=body, headers={**headers, "Content-Type": media})

    def _discovery_root(self, request: web.Request, legacy: bool) -> web.Response:
        accept = request.headers.get("Accept", "")
        for version, ctype in (
            ("v2", discovery.AGGREGATED_CONTENT_TYPE),
            ("v2beta1", discovery.AGGREGATED_V2BETA1_CONTENT_TYPE),
        ):
            if f"v={version};as=APIGroupDiscoveryList" in accept.replace(" ", ""):
                key = f"{legacy}-{version}"
                body = self._discovery.get(key)
                if body is None:
                    body = self._discovery[key] = discovery.aggregated(self.discovery_table, legacy, version)
                resp = web.Response(body=body)
                resp.headers["Content-Type"] = ctype
                return resp
        host = request.host or f"127.0.0.1:{self.secure_port}"
        body = discovery.api_versions(host) if legacy else discovery.api_group_list(self.discovery_table)
        return web.Response(body=body, content_type="application/json")

    @property
    def health(self) -> HealthChecks:
        async def ping() -> bool:
            return True

        async def storage() -> bool:
            if self.store is None:
                return False
            await asyncio.wait_for(self.store.current_revision(), 2)
            return True

        async def caches() -> bool:
            return all(c.ready for c in self.cachers)

        name = "etcd" if self.options.etcd_servers else "sqlite"
        return HealthChecks(
            {
                "healthz": {"ping": ping, "log": ping, name: storage},
                "livez": {"ping": ping, "log": ping, name: storage},
                "readyz": {"ping": ping, "log": ping, name: storage, "informer-sync": caches},
            }
        )


def _attributes_of(strategy: Strategy) -> Callable[[Object], tuple[dict[str, str], dict[str, str]]]:
    """What the watch cache filters on: an object's labels and its strategy's selectable fields."""

    def attributes(obj: Object) -> tuple[dict[str, str], dict[str, str]]:
        return (obj.get("metadata", {}).get("labels") or {}), strategy.fields(obj)

    return attributes
