"""The `pyk8s` command: `up` (a whole cluster), `apiserver`, `controller-manager`, `scheduler` (its commands live in
`pyk8s.scheduler.cli`), `apply`/`delete` of manifests, and `version`. Flags follow upstream's names."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from . import KUBERNETES_MAJOR, KUBERNETES_MINOR, __version__
from .component_options import go_bool_option, secure_port_options
from .controllers.options import controller_flags

if TYPE_CHECKING:
    from .client.kubeconfig import ClientConfig
    from .client.rest import RESTClient

F = TypeVar("F", bound=Callable[..., Any])


class Component(Protocol):
    """What every long-running component is (DESIGN rule 5): an object with `async run()`."""

    async def run(self) -> None: ...


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="pyk8s")
def main() -> None:
    """pyk8s: a Kubernetes control plane in Python, speaking the v1.32 API."""


@main.command()
def version() -> None:
    """Print the pyk8s version and the Kubernetes API version it serves."""
    click.echo(f"pyk8s {__version__} (Kubernetes API v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR})")


def _run(coro_factory: Callable[[], Coroutine[Any, Any, Any]]) -> None:
    from .rlimit import raise_nofile_limit

    raise_nofile_limit()  # every long-running component, as Go's runtime does (see rlimit)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        asyncio.run(coro_factory())
        return
    uvloop.run(coro_factory())


async def _serve_until_signal(server: object) -> None:
    from .apiserver.server import APIServer
    from .gc_policy import freeze_long_lived

    assert isinstance(server, APIServer)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    freeze_long_lived()  # the watch caches are loaded: see gc_policy
    return_code = 0
    try:
        await stop.wait()
    finally:
        await server.stop()
    raise SystemExit(return_code)


def run_component(config: ClientConfig, make: Callable[[RESTClient], Component]) -> None:
    """Run one component (`make(client).run()`) against the API server `config` names, until it ends or
    SIGINT/SIGTERM cancels it."""
    from .client.rest import RESTClient

    async def go() -> None:
        loop = asyncio.get_running_loop()
        async with RESTClient(config) as client:
            task = asyncio.create_task(make(client).run())
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, task.cancel)
            try:
                await task
            except asyncio.CancelledError:
                pass

    _run(go)


def parse_duration(text: str) -> float:
    """Seconds in a Go duration such as "5m", "1m30s", "300ms" (upstream flags take these); a bare number is
    seconds."""
    from .api.duration import parse_go_duration

    s = text.strip()
    try:
        return float(s) if s.replace(".", "", 1).isdigit() else parse_go_duration(s) / 1e9
    except ValueError:
        raise click.BadParameter(f"invalid duration {text!r} (use e.g. 5m, 30s, 1m30s)") from None


def _apiserver_options(data_dir: Path, **kw: object) -> object:
    from .aggregator.options import AggregatorOptions, parse_string_slice
    from .apiserver.admission.plugins import AdmissionOptions, parse_plugin_list
    from .apiserver.audit import LogOptions, WebhookOptions, load_policy
    from .apiserver.audit.policy import PolicyError
    from .apiserver.authz import parse_modes
    from .apiserver.server import APIServerOptions

    admission = AdmissionOptions(
        enable_plugins=parse_plugin_list(str(kw["enable_admission_plugins"])),
        disable_plugins=parse_plugin_list(str(kw["disable_admission_plugins"])),
        default_not_ready_toleration_seconds=int(kw["default_not_ready_toleration_seconds"]),  # type: ignore[call-overload]
        default_unreachable_toleration_seconds=int(kw["default_unreachable_toleration_seconds"]),  # type: ignore[call-overload]
        config_file=str(kw["admission_control_config_file"]),
    )
    aggregator = AggregatorOptions(
        proxy_client_cert_file=str(kw["proxy_client_cert_file"]),
        proxy_client_key_file=str(kw["proxy_client_key_file"]),
        requestheader_client_ca_file=str(kw["requestheader_client_ca_file"]),
        requestheader_allowed_names=parse_string_slice(str(kw["requestheader_allowed_names"])),
        requestheader_username_headers=parse_string_slice(str(kw["requestheader_username_headers"])),
        requestheader_group_headers=parse_string_slice(str(kw["requestheader_group_headers"])),
        requestheader_extra_headers_prefix=parse_string_slice(str(kw["requestheader_extra_headers_prefix"])),
        enable_aggregator_routing=bool(kw["enable_aggregator_routing"]),
    )
    try:
        modes = parse_modes(str(kw["authorization_mode"]), str(kw["authorization_webhook_config_file"]))
    except ValueError as err:
        raise click.UsageError(str(err)) from None
    authorization_webhook = _authorization_webhook_options(kw)
    audit_log = LogOptions(
        path=str(kw["audit_log_path"]),
        max_age_days=int(kw["audit_log_maxage"]),  # type: ignore[call-overload]
        max_backups=int(kw["audit_log_maxbackup"]),  # type: ignore[call-overload]
        max_size_mb=int(kw["audit_log_maxsize"]),  # type: ignore[call-overload]
        compress=bool(kw["audit_log_compress"]),
        format=str(kw["audit_log_format"]),
        mode=str(kw["audit_log_mode"]),
        version=str(kw["audit_log_version"]),
    )
    audit_webhook = WebhookOptions(
        config_file=str(kw["audit_webhook_config_file"]),
        mode=str(kw["audit_webhook_mode"]),
        batch_buffer_size=int(kw["audit_webhook_batch_buffer_size"]),  # type: ignore[call-overload]
        batch_max_size=int(kw["audit_webhook_batch_max_size"]),  # type: ignore[call-overload]
        batch_max_wait=parse_duration(str(kw["audit_webhook_batch_max_wait"])),
        initial_backoff=parse_duration(str(kw["audit_webhook_initial_backoff"])),
        version=str(kw["audit_webhook_version"]),
    )
    authentication = _authentication_options(kw)
    problems = (
        admission.validate()
        + aggregator.validate()
        + audit_log.validate()
        + audit_webhook.validate()
        + authentication.validate()
    )
    problems += authorization_webhook.validate()
    if kw["audit_policy_file"]:
        try:
            load_policy(str(kw["audit_policy_file"]))
        except PolicyError as err:
            problems.append(str(err))
    if problems:
        raise click.UsageError("; ".join(problems))
    return APIServerOptions(
        admission=admission,
        aggregator=aggregator,
        authorization_modes=modes,
        authorization_webhook=authorization_webhook,
        authentication=authentication,
        audit_policy_file=str(kw["audit_policy_file"]),
        audit_log=audit_log,
        audit_webhook=audit_webhook,
        data_dir=data_dir.expanduser().resolve(),
        etcd_servers=[s for s in str(kw["etcd_servers"]).split(",") if s],
        bind_address=str(kw["bind_address"]),
        secure_port=int(kw["secure_port"]),  # type: ignore[call-overload]
        insecure_port=int(kw["insecure_port"]),  # type: ignore[call-overload]
        tls_sans=list(kw["tls_san"]),  # type: ignore[call-overload]
        compaction_interval=parse_duration(str(kw["etcd_compaction_interval"])),
        watch_cache_history=int(kw["default_watch_cache_size"]),  # type: ignore[call-overload]
        request_timeout=parse_duration(str(kw["request_timeout"])),
        min_request_timeout=int(kw["min_request_timeout"]),  # type: ignore[call-overload]
        max_requests_inflight=int(kw["max_requests_inflight"]),  # type: ignore[call-overload]
        max_mutating_requests_inflight=int(kw["max_mutating_requests_inflight"]),  # type: ignore[call-overload]
        http2=not kw["disable_http2_serving"],
    )


def _authentication_options(kw: dict[str, object]) -> Any:
    from .aggregator.options import parse_string_slice
    from .apiserver.authn.oidc import OIDCOptions
    from .apiserver.authn.options import AuthenticationOptions

    max_expiration = str(kw["service_account_max_token_expiration"])
    return AuthenticationOptions(
        service_account_issuers=tuple(kw["service_account_issuer"]),  # type: ignore[arg-type]
        service_account_key_files=tuple(kw["service_account_key_file"]),  # type: ignore[arg-type]
        service_account_signing_key_file=str(kw["service_account_signing_key_file"]),
        api_audiences=tuple(parse_string_slice(str(kw["api_audiences"]))),
        service_account_lookup=bool(kw["service_account_lookup"]),
        service_account_max_token_expiration=parse_duration(max_expiration) if max_expiration else 0.0,
        service_account_extend_token_expiration=bool(kw["service_account_extend_token_expiration"]),
        service_account_jwks_uri=str(kw["service_account_jwks_uri"]),
        token_auth_file=str(kw["token_auth_file"]),
        enable_bootstrap_token_auth=bool(kw["enable_bootstrap_token_auth"]),
        anonymous_auth=bool(kw["anonymous_auth"]),
        token_webhook_config_file=str(kw["authentication_token_webhook_config_file"]),
        token_webhook_version=str(kw["authentication_token_webhook_version"]),
        token_webhook_cache_ttl=parse_duration(str(kw["authentication_token_webhook_cache_ttl"])),
        oidc=OIDCOptions(
            issuer_url=str(kw["oidc_issuer_url"]),
            client_id=str(kw["oidc_client_id"]),
            ca_file=str(kw["oidc_ca_file"]),
            username_claim=str(kw["oidc_username_claim"]),
            username_prefix=str(kw["oidc_username_prefix"]),
            groups_claim=str(kw["oidc_groups_claim"]),
            groups_prefix=str(kw["oidc_groups_prefix"]),
            signing_algs=tuple(parse_string_slice(str(kw["oidc_signing_algs"]))),
            required_claims=tuple(kw["oidc_required_claim"]),  # type: ignore[arg-type]
        ),
    )


def _authorization_webhook_options(kw: dict[str, object]) -> Any:
    from .apiserver.authz.webhook import WebhookOptions

    return WebhookOptions(
        config_file=str(kw["authorization_webhook_config_file"]),
        version=str(kw["authorization_webhook_version"]),
        cache_authorized_ttl=parse_duration(str(kw["authorization_webhook_cache_authorized_ttl"])),
        cache_unauthorized_ttl=parse_duration(str(kw["authorization_webhook_cache_unauthorized_ttl"])),
    )


def _default_data_dir() -> Path:
    from .storage.factory import default_data_dir

    return default_data_dir()


_server_options = [
    click.option("--etcd-servers", default="", help="Comma-separated etcd endpoints (host:port); SQLite when empty."),
    click.option("--bind-address", default="127.0.0.1", show_default=True, help="Address to serve HTTPS on."),
    click.option("--secure-port", default=6443, show_default=True, help="HTTPS port (0: any free port)."),
    click.option("--insecure-port", default=0, help="Plain HTTP port on loopback, anonymous admin (0: off)."),
    click.option("--tls-san", multiple=True, help="Extra names and IPs for the serving certificate."),
    click.option(
        "--etcd-compaction-interval", default="5m", show_default=True, help="How often storage history is compacted."
    ),
    click.option(
        "--default-watch-cache-size",
        default=100_000,
        show_default=True,
        help="Events each watch cache keeps for resuming watches.",
    ),
    click.option("--request-timeout", default="1m", show_default=True, help="Deadline of non-watch requests."),
    click.option(
        "--min-request-timeout", default=1800, show_default=True, help="Seconds a watch lasts at least (30-60 min)."
    ),
    click.option(
        "--max-requests-inflight",
        default=400,
        show_default=True,
        help="Read requests served at once; more wait their turn (15 s at most) before a 429.",
    ),
    click.option(
        "--max-mutating-requests-inflight",
        default=200,
        show_default=True,
        help="Writes served at once; more wait their turn (15 s at most) before a 429.",
    ),
    click.option(
        "--disable-http2-serving", is_flag=True, default=False, help="Serve HTTP/1.1 only (no ALPN h2), as upstream."
    ),
    click.option("--enable-admission-plugins", default="", help="Admission plugins to turn on besides the defaults."),
    click.option("--disable-admission-plugins", default="", help="Admission plugins to turn off (comma-separated)."),
    click.option(
        "--admission-control-config-file",
        default="",
        help="AdmissionConfiguration file: PodSecurity, ResourceQuota and webhook plugins' configuration.",
    ),
    click.option(
        "--default-not-ready-toleration-seconds",
        default=300,
        show_default=True,
        help="tolerationSeconds of the not-ready:NoExecute toleration added to pods.",
    ),
    click.option(
        "--default-unreachable-toleration-seconds",
        default=300,
        show_default=True,
        help="tolerationSeconds of the unreachable:NoExecute toleration added to pods.",
    ),
    click.option(
        "--proxy-client-cert-file",
        default="",
        help="Client certificate the aggregator presents to extension API servers (default: the PKI's "
        "front-proxy-client.crt).",
    ),
    click.option("--proxy-client-key-file", default="", help="Key of --proxy-client-cert-file."),
    click.option(
        "--requestheader-client-ca-file",
        default="",
        help="CA that extension API servers verify the front proxy's certificate with, published in "
        "kube-system/extension-apiserver-authentication (default: the PKI's front-proxy-ca.crt).",
    ),
    click.option(
        "--requestheader-allowed-names",
        default="front-proxy-client",
        show_default=True,
        help="Common names of front-proxy certificates allowed to assert users in headers (comma-separated; "
        "empty: any).",
    ),
    click.option(
        "--requestheader-username-headers",
        default="X-Remote-User",
        show_default=True,
        help="Request headers to inspect for usernames (comma-separated).",
    ),
    click.option(
        "--requestheader-group-headers",
        default="X-Remote-Group",
        show_default=True,
        help="Request headers to inspect for groups (comma-separated).",
    ),
    click.option(
        "--requestheader-extra-headers-prefix",
        default="X-Remote-Extra-",
        show_default=True,
        help="Request header prefixes to inspect for extra user information (comma-separated).",
    ),
    click.option("--audit-policy-file", default="", help="Path to the file that defines the audit policy."),
    click.option("--audit-log-path", default="", help="If set, audit events are written to this file ('-': stdout)."),
    click.option("--audit-log-maxage", default=0, help="Days to keep old audit log files (0: no limit)."),
    click.option("--audit-log-maxbackup", default=0, help="Old audit log files to keep (0: no limit)."),
    click.option("--audit-log-maxsize", default=0, help="Megabytes of an audit log file before it is rotated."),
    click.option("--audit-log-compress", is_flag=True, default=False, help="Gzip the rotated audit log files."),
    click.option("--audit-log-format", default="json", show_default=True, help="json or legacy (one text line)."),
    click.option("--audit-log-mode", default="blocking", show_default=True, help="blocking, blocking-strict or batch."),
    click.option("--audit-log-version", default="audit.k8s.io/v1", show_default=True, help="API version of events."),
    click.option(
        "--audit-webhook-config-file",
        default="",
        help="A kubeconfig file naming the webhook audit events are POSTed to (as EventLists).",
    ),
    click.option(
        "--audit-webhook-mode", default="batch", show_default=True, help="batch, blocking or blocking-strict."
    ),
    click.option(
        "--audit-webhook-batch-buffer-size",
        default=10000,
        show_default=True,
        help="Events buffered before later ones are dropped (batch mode).",
    ),
    click.option("--audit-webhook-batch-max-size", default=400, show_default=True, help="Events per request at most."),
    click.option(
        "--audit-webhook-batch-max-wait",
        default="30s",
        show_default=True,
        help="How long an event waits for a batch to fill before it is sent anyway.",
    ),
    click.option(
        "--audit-webhook-initial-backoff",
        default="10s",
        show_default=True,
        help="The wait before the first retry of a failed send.",
    ),
    click.option(
        "--audit-webhook-version", default="audit.k8s.io/v1", show_default=True, help="API version of events."
    ),
    click.option(
        "--authorization-mode",
        default="Node,RBAC",
        show_default=True,
        help="Ordered list of authorization modes (comma-separated): AlwaysAllow, AlwaysDeny, RBAC, Node, "
        "Webhook. system:masters is always allowed.",
    ),
    click.option(
        "--authorization-webhook-config-file",
        default="",
        help="File with webhook configuration in kubeconfig format, used with --authorization-mode=Webhook: the "
        "remote service is asked to decide access on the secure port.",
    ),
    click.option(
        "--authorization-webhook-version",
        default="v1beta1",
        show_default=True,
        help="API version of the authorization.k8s.io SubjectAccessReview sent to and expected from the webhook.",
    ),
    click.option(
        "--authorization-webhook-cache-authorized-ttl",
        default="5m0s",
        show_default=True,
        help="How long 'authorized' answers of the webhook authorizer are cached.",
    ),
    click.option(
        "--authorization-webhook-cache-unauthorized-ttl",
        default="30s",
        show_default=True,
        help="How long 'unauthorized' answers of the webhook authorizer are cached.",
    ),
    click.option(
        "--service-account-issuer",
        multiple=True,
        help="Identifier of the service account token issuer, the iss of the tokens it signs (repeatable: the "
        "first signs, all are accepted; default https://kubernetes.default.svc.cluster.local).",
    ),
    click.option(
        "--service-account-key-file",
        multiple=True,
        help="PEM file of RSA or ECDSA keys that verify service account tokens (repeatable; default: the PKI's "
        "sa.pub).",
    ),
    click.option(
        "--service-account-signing-key-file",
        default="",
        help="PEM private key that signs service account tokens (default: the PKI's sa.key, made on first start).",
    ),
    click.option(
        "--api-audiences",
        default="",
        help="Audiences of the API (comma-separated); tokens must be meant for one of them (default: the issuers).",
    ),
    go_bool_option(
        "--service-account-lookup", True, "Check that the service accounts and secrets tokens name still exist."
    ),
    click.option(
        "--service-account-max-token-expiration",
        default="",
        help="Longest validity of a token the TokenRequest API issues (e.g. 48h; between 1h and 2^32s; default: none).",
    ),
    go_bool_option(
        "--service-account-extend-token-expiration",
        True,
        "Make projected tokens of the admission plugin's 3607 s valid for a year, only warning after the hour.",
    ),
    click.option(
        "--service-account-jwks-uri",
        default="",
        help="jwks_uri of the OIDC discovery document (https; default: https://<this server>/openid/v1/jwks).",
    ),
    click.option("--token-auth-file", default="", help='CSV of static bearer tokens: token,user,uid,"group1,group2".'),
    go_bool_option(
        "--enable-bootstrap-token-auth",
        False,
        "Accept bootstrap tokens (kube-system Secrets of type bootstrap.kubernetes.io/token).",
    ),
    go_bool_option(
        "--anonymous-auth",
        True,
        "Serve requests without credentials as system:anonymous (=false: 401).",
    ),
    click.option(
        "--authentication-token-webhook-config-file",
        default="",
        help="File with webhook configuration for token authentication in kubeconfig format: bearer tokens are "
        "sent to the remote service in TokenReviews.",
    ),
    click.option(
        "--authentication-token-webhook-version",
        default="v1beta1",
        show_default=True,
        help="API version of the authentication.k8s.io TokenReview sent to and expected from the webhook.",
    ),
    click.option(
        "--authentication-token-webhook-cache-ttl",
        default="2m0s",
        show_default=True,
        help="How long the webhook token authenticator's answers are cached.",
    ),
    click.option(
        "--oidc-issuer-url",
        default="",
        help="The URL of the OpenID issuer, only HTTPS scheme will be accepted. If set, it will be used to verify "
        "the OIDC JSON Web Token (JWT).",
    ),
    click.option(
        "--oidc-client-id",
        default="",
        help="The client ID for the OpenID Connect client, must be set if oidc-issuer-url is set.",
    ),
    click.option(
        "--oidc-ca-file",
        default="",
        help="If set, the OpenID server's certificate will be verified by one of the authorities in the "
        "oidc-ca-file, otherwise the host's root CA set will be used.",
    ),
    click.option(
        "--oidc-username-claim", default="sub", show_default=True, help="The OpenID claim to use as the user name."
    ),
    click.option(
        "--oidc-username-prefix",
        default="",
        help="If provided, all usernames will be prefixed with this value. If not provided, username claims other "
        "than 'email' are prefixed by the issuer URL to avoid clashes. To skip any prefixing, provide the value '-'.",
    ),
    click.option(
        "--oidc-groups-claim",
        default="",
        help="If provided, the name of a custom OpenID Connect claim for specifying user groups (a string or an "
        "array of strings).",
    ),
    click.option("--oidc-groups-prefix", default="", help="If provided, all groups will be prefixed with this value."),
    click.option(
        "--oidc-signing-algs",
        default="RS256",
        show_default=True,
        help="Comma-separated list of allowed JOSE asymmetric signing algorithms: RS256, RS384, RS512, ES256, "
        "ES384, ES512, PS256, PS384, PS512.",
    ),
    click.option(
        "--oidc-required-claim",
        multiple=True,
        help="A key=value pair that describes a required claim in the ID Token (repeatable).",
    ),
    go_bool_option(
        "--enable-aggregator-routing",
        True,
        "Reach the Services of APIServices and conversion webhooks through their endpoints' addresses "
        "rather than their cluster IPs; `=false` for the cluster IP (upstream's default, but pyk8s has no "
        "service proxy: a cluster IP is reached only when it is a loopback address).",
    ),
    click.option("-v", "--v", "verbosity", default=0, help="Log verbosity (0-4)."),
]


def _with_server_options(f: F) -> F:
    for opt in reversed(_server_options):
        f = opt(f)
    return f


def _logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity < 3 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@main.command()
@click.option("--data-dir", type=click.Path(path_type=Path), default=None, help="State and PKI directory.")
@_with_server_options
def apiserver(data_dir: Path | None, verbosity: int, **kw: object) -> None:
    """Serve the Kubernetes v1.32 API (kube-apiserver)."""
    from .apiserver.server import APIServer
    from .storage import StorageError

    _logging(verbosity)
    opts = _apiserver_options(data_dir or _default_data_dir(), **kw)
    server = APIServer(opts)  # type: ignore[arg-type]
    try:
        _run(lambda: _serve_until_signal(server))
    except (StorageError, OSError, ValueError) as e:
        raise click.ClickException(str(e)) from None


UP_HELP = """Start a cluster in the foreground until Ctrl-C; state is kept for the next start.

\b
The API server runs in this process; the controller manager, the scheduler and
the simulated nodes (`--nodes N`, 3 by default: `pyk8s nodes`) run as child
processes, and `up` says the cluster is up once each of them answers its health
check. Their output goes to DATA_DIR/logs/<name>.log (also
shown here with -v 1 or more).

\b
A component that exits is restarted, as a process supervisor would: its last
log lines are shown, then it starts again after 1s, 2s, 4s... (at most 30s
between tries; back to 1s once it has stayed healthy for a minute). The API
server keeps serving meanwhile. Ctrl-C or SIGTERM stops the components, then
the API server."""


async def _wait_healthy(components: list[Any], stop: asyncio.Event, status: Any) -> bool:
    """Until every component is healthy (True) or we are told to stop (False), showing who is waited for."""
    while not stop.is_set():
        waiting = [c for c in components if not c.healthy.is_set()]
        if not waiting:
            return True
        status.update("waiting for " + ", ".join(f"{c.name} ({c.status})" for c in waiting) + "...")
        await asyncio.sleep(0.2)
    return False


@main.command(help=UP_HELP)
@click.option(
    "--data-dir", type=click.Path(path_type=Path), default=None, help="State directory (default: ~/.local/share/pyk8s)."
)
@click.option(
    "--nodes",
    "node_count",
    type=click.IntRange(0),
    default=3,
    show_default=True,
    help="Simulated nodes to run (`pyk8s nodes`), named node-0, node-1, ...; 0 for none.",
)
@_with_server_options
def up(data_dir: Path | None, node_count: int, verbosity: int, **kw: object) -> None:
    from rich.console import Console
    from rich.text import Text

    from .apiserver.bootstrap_token import ensure_node_bootstrap
    from .apiserver.kubeconfigs import CONTROLLER_MANAGER_USER, SCHEDULER_USER, write_component_kubeconfig
    from .apiserver.server import APIServer
    from .gc_policy import freeze_long_lived
    from .storage import StorageError
    from .supervisor import SupervisedComponent

    _logging(verbosity)
    # soft_wrap: long lines (URLs, log lines) stay whole rather than broken at the terminal's width.
    console = Console(stderr=True, soft_wrap=True)
    kw["enable_bootstrap_token_auth"] = True  # nodes join with a bootstrap token, as in kubeadm's clusters
    # NodeRestriction holds each node to its own objects, as kubeadm enables it (upstream's default set does not).
    enabled = [p for p in str(kw.get("enable_admission_plugins") or "").split(",") if p]
    if "NodeRestriction" not in enabled and "NodeRestriction" not in str(kw.get("disable_admission_plugins") or ""):
        kw["enable_admission_plugins"] = ",".join([*enabled, "NodeRestriction"])
    opts = _apiserver_options(data_dir or _default_data_dir(), **kw)
    server = APIServer(opts)  # type: ignore[arg-type]

    def report(message: str) -> None:
        console.print(Text(message, style="yellow"))

    def echo(name: str, line: str) -> None:
        if verbosity > 0:
            console.print(Text.assemble((f"{name} | ", "cyan"), line))

    async def go() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        with console.status("starting the API server (storage, PKI, watch caches)..."):
            await server.start()
        freeze_long_lived()  # the watch caches are loaded: see gc_policy
        # The other components are clients of the API server, each in its own process as upstream's. Port 0:
        # their health ports are any free ones (they say which through --port-file), so two clusters never
        # collide.
        data = server.options.data_dir
        common = ["--v", str(verbosity), "--secure-port", "0"]
        # Each component as its own user, as kubeadm sets them up; the simulated nodes join by TLS bootstrap,
        # each with its own certificate as system:node:<name>.
        assert server.pki is not None
        kubeconfigs = {"controller-manager": (CONTROLLER_MANAGER_USER, "controller-manager.conf"),
                       "scheduler": (SCHEDULER_USER, "scheduler.conf")}  # fmt: skip
        for user, file in kubeconfigs.values():
            write_component_kubeconfig(data / file, server.url, server.pki, user)
        await _install_addon_rbac(server)
        await ensure_node_bootstrap(server, data / "bootstrap-kubelet.conf", server.pki)
        # Pod CIDRs per node, as kubeadm's clusters with flannel's default (the node IPAM controller's range);
        # every controller as its own service account, as kubeadm runs kube-controller-manager.
        cm_flags = ["--kubeconfig", str(data / "controller-manager.conf"), "--allocate-node-cidrs",
                    "--cluster-cidr", "10.244.0.0/16", "--use-service-account-credentials=true",
                    # the CSR signer issues the nodes' certificates with the cluster CA, as kubeadm configures it
                    "--cluster-signing-cert-file", str(server.pki.ca_cert),
                    "--cluster-signing-key-file", str(server.pki.ca_key)]  # fmt: skip
        commands: dict[str, list[str]] = {
            "controller-manager": cm_flags, "scheduler": ["--kubeconfig", str(data / "scheduler.conf")],
        }  # fmt: skip
        if node_count:
            commands["nodes"] = ["--bootstrap-kubeconfig", str(data / "bootstrap-kubelet.conf"),
                                 "--cert-dir", str(data / "kubelet" / "pki"), "--count", str(node_count)]  # fmt: skip
        components = [
            SupervisedComponent(
                name, [name, *common, *extra], log_dir=data / "logs", run_dir=data / "run", report=report, echo=echo
            )
            for name, extra in commands.items()
        ]
        for c in components:
            c.start()
        try:
            with console.status("waiting for the components...") as status:
                if not await _wait_healthy(components, stop, status):
                    return
            cm, sched = components[:2]
            console.print(f"[green]pyk8s is up[/]: API server at {server.url} (data in {data})")
            console.print(
                f"controller manager (garbage collector, namespace, node lifecycle, ...): pid {cm.pid}, {cm.health_url}"
            )
            console.print(f"scheduler (default profile): pid {sched.pid}, {sched.health_url}")
            if node_count:
                nodes = components[2]
                console.print(f"{node_count} simulated node(s), node-0...: pid {nodes.pid}, {nodes.health_url}")
            console.print(f"component logs: {data / 'logs'}")
            console.print("Use it with:")
            print(f"export KUBECONFIG={server.kubeconfig_path}", flush=True)
            print("kubectl get namespaces", flush=True)
            console.print("Ctrl-C stops the cluster; its state is kept for the next `pyk8s up`.")
            await stop.wait()
        finally:
            with console.status("stopping..."):
                await asyncio.gather(*(c.stop() for c in components))
                await server.stop()
            console.print("stopped.")

    try:
        _run(go)
    except (StorageError, OSError, ValueError) as e:
        raise click.ClickException(str(e)) from None


async def _install_addon_rbac(server: Any) -> None:
    """The RBAC of the add-ons `pyk8s up` runs beside upstream's components (the local-path provisioner), as
    kind applies its add-ons' manifests: created when missing, left alone otherwise."""
    from .api import errors
    from .apiserver.authn import UserInfo
    from .apiserver.certs import ADMIN_GROUP, ADMIN_USER
    from .apiserver.registry.rest import Context
    from .controllers.volume.local_path_provisioner import rbac_objects

    ctx = Context(UserInfo(ADMIN_USER, groups=(ADMIN_GROUP,)))
    for obj in rbac_objects():
        plural = "clusterroles" if obj["kind"] == "ClusterRole" else "clusterrolebindings"
        try:
            await server.rest("rbac.authorization.k8s.io/v1", plural).create("", obj, ctx)
        except errors.AlreadyExists:
            pass


@main.command("controller-manager")
@click.option("--kubeconfig", default=None, help="Path to the kubeconfig file (default: KUBECONFIG, in-cluster).")
@click.option(
    "--controllers", default="*", show_default=True,
    help="Controllers to run: * for all, a name to enable, -name to disable (comma-separated).",
)  # fmt: skip
@click.option(
    "--leader-elect/--no-leader-elect", default=True, show_default=True, help="Run only while holding the lease."
)
@controller_flags
@click.option("--kube-api-qps", default=20.0, show_default=True, help="Requests per second to the API server.")
@click.option("--kube-api-burst", default=30, show_default=True, help="Burst of requests to the API server.")
@secure_port_options(10257)
@click.option("-v", "--v", "verbosity", default=0, help="Log verbosity (0-4).")
def controller_manager(
    kubeconfig: str | None, controllers: str, leader_elect: bool, kube_api_qps: float, kube_api_burst: int,
    secure_port: int, bind_address: str, port_file: Path | None, verbosity: int, **flags: Any,
) -> None:  # fmt: skip
    """Run the controllers (kube-controller-manager): garbage collector, namespace controller, node lifecycle,
    taint eviction, node IPAM (with --allocate-node-cidrs), pod garbage collector, Deployment, ReplicaSet,
    ReplicationController, DaemonSet, StatefulSet, Job, CronJob, Disruption, horizontal pod autoscaler,
    TTL-after-finished, Endpoints, EndpointSlice, ServiceAccount, root CA publisher, ClusterRole aggregation,
    ResourceQuota, the CertificateSigningRequest approver, signer (with --cluster-signing-cert-file/key-file) and
    cleaner, PersistentVolume binder, PVC and PV protection, and the simulated local-path provisioner. Serves /healthz, /livez, /readyz and /metrics on its
    secure port (HTTPS, self-signed), as upstream's on 10257."""
    from .client.kubeconfig import ConfigError, load_config
    from .controllers.manager import ControllerManager, enabled_controllers
    from .controllers.options import controller_settings

    _logging(verbosity)
    try:
        config = load_config(kubeconfig).with_options(qps=kube_api_qps, burst=kube_api_burst)
        names = [c for c in controllers.split(",") if c.strip()]
        enabled_controllers(names)
        options: dict[str, Any] = controller_settings(flags, parse_duration)
    except (ConfigError, ValueError) as e:
        raise click.ClickException(str(e)) from None

    run_component(config, lambda client: ControllerManager(
        client, names, leader_elect=leader_elect, options=options, bind_address=bind_address,
        secure_port=secure_port, port_file=port_file,
    ))  # fmt: skip


# -- apply and delete from manifests (kubectl's client-side apply; the work is in pyk8s.client.apply) ----------

PROGRESS_THRESHOLD = 20  # objects; above this a terminal gets a progress bar instead of one line per object

_manifest_options = [
    click.option(
        "-f", "--filename", "filenames", multiple=True, required=True,
        help="A manifest file, directory, URL, or - for stdin (repeatable).",
    ),
    click.option("-R", "--recursive", is_flag=True, help="Descend into subdirectories of the -f directories."),
    click.option("-n", "--namespace", default=None, help="Namespace for objects that name none; others must match."),
    click.option("--kubeconfig", default=None, help="Path to the kubeconfig file."),
    click.option("--context", default=None, help="The kubeconfig context to use."),
    click.option(
        "--dry-run", type=click.Choice(["none", "client", "server"]), default="none", show_default=True,
        help="client: send nothing; server: the server runs every step but stores nothing.",
    ),
]  # fmt: skip


def _with_manifest_options(f: F) -> F:
    for opt in reversed(_manifest_options):
        f = opt(f)
    return f


def _run_manifests(verb: str, kw: dict[str, object], run: object, validate: bool = True) -> int:
    """Build Infos from the -f arguments, hand them to `run(client, infos, report)`, print as kubectl does
    (lines, or a progress bar for many objects on a terminal), then the errors; the exit code."""
    import sys

    from rich.console import Console
    from rich.progress import Progress

    from .api.errors import StatusError
    from .client.apply import Outcome
    from .client.discovery import RESTMapper
    from .client.kubeconfig import ConfigError, load_config
    from .client.resource_builder import ResourceBuilder
    from .client.rest import RESTClient

    filenames = [str(f) for f in kw["filenames"]]  # type: ignore[attr-defined]
    namespace = kw.get("namespace") or None
    try:
        config = load_config(kw.get("kubeconfig") or None, context=kw.get("context") or None)  # type: ignore[arg-type]
    except ConfigError as e:
        click.echo(f"error: {e}", err=True)
        return 1
    # Objects go one at a time; client-go's 5 requests/s would make a bulk apply crawl (kubectl allows its
    # discovery 50/s, and that is what every request here gets).
    config = config.with_options(qps=50.0, burst=100, **({"namespace": namespace} if namespace else {}))
    stdin = click.get_binary_stream("stdin").read() if "-" in filenames else None
    failures: list[Exception] = []

    def show_error(err: Exception) -> None:
        if isinstance(err, StatusError):
            reason = f" ({err.reason})" if err.reason else ""
            click.echo(f"Error from server{reason}: {err.message}", err=True)
        else:
            click.echo(f"error: {err}", err=True)

    async def go() -> None:
        async with RESTClient(config) as client:
            builder = ResourceBuilder(
                RESTMapper(client),
                namespace=config.namespace,
                enforce_namespace=bool(namespace),
                stdin=stdin,
                validate=validate,
            ).filename_param(filenames, bool(kw.get("recursive")))
            result = await builder.do()
            failures.extend(result.errors)
            if not result.infos and not result.errors:
                failures.append(RuntimeError(f"no objects passed to {verb}"))
            if not result.infos:
                return
            bar = len(result.infos) > PROGRESS_THRESHOLD and sys.stdout.isatty()
            counts: dict[str, int] = {}
            progress = Progress(console=Console(), transient=False) if bar else None
            task = progress.add_task(verb, total=len(result.infos)) if progress else None

            def report(outcome: Outcome) -> None:
                for w in outcome.warnings:
                    click.echo(f"Warning: {w}", err=True)
                if outcome.error is not None:
                    failures.append(outcome.error)
                elif outcome.operation:
                    counts[outcome.operation] = counts.get(outcome.operation, 0) + 1
                    if progress is None:
                        click.echo(outcome.line())
                    elif outcome.operation != "unchanged":
                        progress.console.print(outcome.line(), highlight=False, markup=False)
                if progress is not None and task is not None:
                    progress.advance(task)

            if progress is not None:
                with progress:
                    await run(client, result.infos, report)  # type: ignore[operator]
                click.echo(", ".join(f"{n} {op}" for op, n in counts.items()) or "nothing done")
            else:
                await run(client, result.infos, report)  # type: ignore[operator]

    _run(go)
    for err in failures:
        show_error(err)
    return 1 if failures else 0


@main.command()
@_with_manifest_options
@click.option("--field-manager", default="kubectl-client-side-apply", show_default=True, help="Name of the manager.")
@click.option(
    "--validate", type=click.Choice(["strict", "warn", "ignore", "true", "false"]), default="strict",
    show_default=True,
    help="Server fieldValidation; ignore/false also skip the check that each document has a kind and apiVersion.",
)  # fmt: skip
def apply(field_manager: str, validate: str, **kw: object) -> None:
    """Apply manifests client-side, as kubectl apply: create what is missing, patch what changed."""
    from .client.apply import ApplyOptions, apply_all

    validation = {"strict": "Strict", "true": "Strict", "warn": "Warn", "ignore": "Ignore", "false": "Ignore"}
    opts = ApplyOptions(dry_run=kw["dry_run"], field_manager=field_manager, field_validation=validation[validate])  # type: ignore[arg-type]
    check = validate not in ("ignore", "false")
    raise SystemExit(_run_manifests("apply", kw, lambda c, infos, report: apply_all(c, infos, opts, report), check))


@main.command()
@_with_manifest_options
@click.option("--ignore-not-found", is_flag=True, help="Objects that do not exist are not an error.")
@click.option(
    "--cascade", type=click.Choice(["background", "foreground", "orphan"]), default="background",
    show_default=True, help="How dependents are deleted (propagationPolicy).",
)  # fmt: skip
@click.option("--grace-period", type=int, default=None, help="Seconds given to the object to terminate.")
def delete(ignore_not_found: bool, cascade: str, grace_period: int | None, **kw: object) -> None:
    """Delete the objects named in manifests, as kubectl delete -f."""
    from .client.apply import DeleteOptions, delete_all

    opts = DeleteOptions(cascade, ignore_not_found, grace_period, kw["dry_run"])  # type: ignore[arg-type]
    # kubectl delete reads manifests without its schema check: only what cannot be mapped is an error.
    run = _run_manifests("delete", kw, lambda c, infos, report: delete_all(c, infos, opts, report), validate=False)
    raise SystemExit(run)


if __name__ == "__main__":
    main()


def _add_component_commands() -> None:
    from .kubelet.cli import nodes
    from .scheduler.cli import scheduler

    main.add_command(scheduler)
    main.add_command(nodes)


_add_component_commands()
