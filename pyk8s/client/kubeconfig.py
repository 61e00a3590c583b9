"""Where a client finds its API server and credentials: kubeconfig files and the in-cluster service account.

`load_kubeconfig` reads one or several kubeconfig files (the `KUBECONFIG` list is merged as client-go's
clientcmd merges it: for each named cluster, user and context, and for `current-context`, the first file that
sets it wins), picks a context and returns a `ClientConfig`. `in_cluster_config` builds one from the pod's
service-account files and `KUBERNETES_SERVICE_HOST`/`_PORT` (upstream: rest.InClusterConfig). `load_config`
chooses between them the way client-go's default loading rules do.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# client-go rereads a token file at most once a minute: rotated service-account tokens get picked up without
# a file read per request.
TOKEN_FILE_REFRESH = 60.0


class ConfigError(Exception):
    """A kubeconfig or in-cluster configuration that cannot be used; the message names what is wrong."""


@dataclass
class ClientConfig:
    """Everything a `RESTClient` needs to reach one API server (upstream: rest.Config)."""

    server: str
    namespace: str = "default"
    ca_data: bytes | None = None
    ca_file: str | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    token: str | None = None
    token_file: str | None = None
    username: str | None = None
    password: str | None = None
    impersonate_user: str | None = None
    impersonate_groups: tuple[str, ...] = ()
    # client-go's defaults: 5 requests/s with bursts of 10; a negative qps turns the limiter off.
    qps: float = 5.0
    burst: int = 10
    timeout: float | None = None  # per request, seconds; watches are not limited by it
    user_agent: str = ""
    # A source of tokens that change (a controller's service account token, renewed): asked per request.
    token_source: Callable[[], str] | None = field(default=None, repr=False, compare=False)
    _token_cache: tuple[float, str] | None = field(default=None, repr=False, compare=False)

    def with_options(self, **changes: Any) -> ClientConfig:
        """A copy with some fields changed (for example `qps=50, burst=100` for a controller)."""
        return replace(self, _token_cache=None, **changes)

    @property
    def is_tls(self) -> bool:
        return self.server.startswith("https://")

    def bearer_token(self) -> str | None:
        """The token to send, rereading `token_file` when the cached copy is older than a minute."""
        if self.token_source is not None:
            return self.token_source()
        if self.token_file:
            now = time.monotonic()
            if self._token_cache is None or now - self._token_cache[0] > TOKEN_FILE_REFRESH:
                try:
                    token = Path(self.token_file).read_text().strip()
                except OSError as err:
                    if self._token_cache is not None:
                        return self._token_cache[1]
                    raise ConfigError(f"reading token file {self.token_file}: {err}") from err
                self._token_cache = (now, token)
            return self._token_cache[1]
        return self.token

    def auth_headers(self) -> dict[str, str]:
        """Credential and impersonation headers. Like kubectl, credentials only go over TLS."""
        headers: dict[str, str] = {}
        if self.is_tls:
            token = self.bearer_token()
            if token:
                headers["Authorization"] = f"Bearer {token}"
            elif self.username is not None:
                raw = f"{self.username}:{self.password or ''}".encode()
                headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        if self.impersonate_user:
            headers["Impersonate-User"] = self.impersonate_user
        return headers

    def impersonation_groups(self) -> list[tuple[str, str]]:
        return [("Impersonate-Group", g) for g in self.impersonate_groups]

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for this server, or None for plain HTTP."""
        if not self.is_tls:
            return None
        if self.insecure_skip_tls_verify and (self.ca_data or self.ca_file):
            raise ConfigError("specifying a root certificates file with the insecure flag is not allowed")
        if self.insecure_skip_tls_verify:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            try:
                if self.ca_data:
                    ctx = ssl.create_default_context(cadata=self.ca_data.decode())
                else:
                    ctx = ssl.create_default_context(cafile=self.ca_file)
            except (ssl.SSLError, OSError, UnicodeDecodeError) as err:
                raise ConfigError(f"loading the certificate authority: {err}") from err
        self._load_client_cert(ctx)
        return ctx

    def _load_client_cert(self, ctx: ssl.SSLContext) -> None:
        cert_file, key_file = self.client_cert_file, self.client_key_file
        if not (self.client_cert_data or cert_file):
            return
        if not (self.client_key_data or key_file):
            raise ConfigError("a client certificate needs a client key")
        # The ssl module only loads certificates from files; inline data goes through a private temp dir.
        with tempfile.TemporaryDirectory(prefix="pyk8s-tls-") as tmp:
            if self.client_cert_data:
                cert_file = os.path.join(tmp, "client.crt")
                Path(cert_file).write_bytes(self.client_cert_data)
            if self.client_key_data:
                key_file = os.path.join(tmp, "client.key")
                fd = os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(self.client_key_data)
            try:
                ctx.load_cert_chain(str(cert_file), str(key_file))
            except (ssl.SSLError, OSError) as err:
                raise ConfigError(f"loading the client certificate: {err}") from err


def _merge_named(into: dict[str, dict[str, Any]], items: Any, where: str, what: str, base: Path) -> None:
    if items is None:
        return
    if not isinstance(items, list):
        raise ConfigError(f"{where}: {what} must be a list")
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ConfigError(f"{where}: {what}[{i}] has no name")
        # First definition wins across files, as clientcmd merges.
        if item["name"] not in into:
            body = item.get(what.rstrip("s")) or {}
            if not isinstance(body, dict):
                raise ConfigError(f"{where}: {what}[{i}] is not a mapping")
            into[item["name"]] = {**body, "__base__": base}


def _default_paths() -> list[str]:
    env = os.environ.get("KUBECONFIG", "")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    return [str(Path.home() / ".kube" / "config")]


def _resolve(base: Path, path: str | None) -> str | None:
    if not path:
        return None
    p = Path(os.path.expanduser(path))
    return str(p if p.is_absolute() else base / p)


def _b64(value: Any, where: str) -> bytes | None:
    if not value:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (ValueError, TypeError) as err:
        raise ConfigError(f"{where} is not valid base64") from err


def load_kubeconfig(
    paths: str | list[str] | None = None, *, context: str | None = None, namespace: str | None = None
) -> ClientConfig:
    """Load and merge kubeconfig files (default: `KUBECONFIG`, else `~/.kube/config`) and resolve a context."""
    if paths is None:
        files = _default_paths()
    elif isinstance(paths, str):
        files = [p for p in paths.split(os.pathsep) if p]
    else:
        files = list(paths)
    clusters: dict[str, dict[str, Any]] = {}
    users: dict[str, dict[str, Any]] = {}
    contexts: dict[str, dict[str, Any]] = {}
    current = ""
    loaded = 0
    for f in files:
        path = Path(os.path.expanduser(f))
        try:
            text = path.read_text()
        except FileNotFoundError:
            # A missing file in a KUBECONFIG list is skipped, as clientcmd does; only all-missing is an error.
            continue
        except OSError as err:
            raise ConfigError(f"reading {path}: {err}") from err
        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: not valid YAML: {err}") from err
        if not isinstance(doc, dict):
            raise ConfigError(f"{path}: a kubeconfig must be a mapping")
        loaded += 1
        base = path.resolve().parent
        _merge_named(clusters, doc.get("clusters"), str(path), "clusters", base)
        _merge_named(users, doc.get("users"), str(path), "users", base)
        _merge_named(contexts, doc.get("contexts"), str(path), "contexts", base)
        if not current and doc.get("current-context"):
            current = str(doc["current-context"])
    if not loaded:
        raise ConfigError(f"no kubeconfig found (looked in {os.pathsep.join(files)})")
    name = context or current
    if not name:
        raise ConfigError("no context chosen: current-context is not set and no context was given")
    ctx = contexts.get(name)
    if ctx is None:
        raise ConfigError(f"context {name!r} does not exist")
    cluster = clusters.get(str(ctx.get("cluster", "")))
    if cluster is None:
        raise ConfigError(f"context {name!r}: cluster {ctx.get('cluster')!r} does not exist")
    user = users.get(str(ctx.get("user", "")), {}) if ctx.get("user") else {}
    if ctx.get("user") and not user:
        raise ConfigError(f"context {name!r}: user {ctx.get('user')!r} does not exist")
    server = str(cluster.get("server") or "")
    if not server:
        raise ConfigError(f"cluster {ctx.get('cluster')!r} has no server")
    if user.get("exec") or user.get("auth-provider"):
        if not (user.get("token") or user.get("tokenFile") or user.get("client-certificate-data")):
            raise ConfigError(f"user {ctx.get('user')!r}: exec and auth-provider credential plugins are not supported")
    cbase: Path = cluster["__base__"]
    ubase: Path = user.get("__base__", cbase)
    return ClientConfig(
        server=server.rstrip("/"),
        namespace=namespace or str(ctx.get("namespace") or "default"),
        ca_data=_b64(cluster.get("certificate-authority-data"), "certificate-authority-data"),
        ca_file=_resolve(cbase, cluster.get("certificate-authority")),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=cluster.get("tls-server-name"),
        client_cert_data=_b64(user.get("client-certificate-data"), "client-certificate-data"),
        client_key_data=_b64(user.get("client-key-data"), "client-key-data"),
        client_cert_file=_resolve(ubase, user.get("client-certificate")),
        client_key_file=_resolve(ubase, user.get("client-key")),
        token=user.get("token") or None,
        token_file=_resolve(ubase, user.get("tokenFile")),
        username=user.get("username"),
        password=user.get("password"),
        impersonate_user=user.get("as"),
        impersonate_groups=tuple(user.get("as-groups") or ()),
    )


def in_cluster_config(root: Path = SERVICE_ACCOUNT_DIR, env: dict[str, str] | None = None) -> ClientConfig:
    """The configuration of a process running in a pod: its service-account token, CA and namespace."""
    env = dict(os.environ) if env is None else env
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise ConfigError(
            "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"
        )
    token_file = root / "token"
    if not token_file.exists():
        raise ConfigError(f"in-cluster token file {token_file} does not exist")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address in a URL
    ns_file = root / "namespace"
    namespace = ns_file.read_text().strip() if ns_file.exists() else "default"
    ca = root / "ca.crt"
    return ClientConfig(
        server=f"https://{host}:{port}",
        namespace=namespace or "default",
        ca_file=str(ca) if ca.exists() else None,
        token_file=str(token_file),
    )


def load_config(kubeconfig: str | None = None, *, context: str | None = None) -> ClientConfig:
    """client-go's default loading: an explicit file, else `KUBECONFIG` / `~/.kube/config`, else in-cluster."""
    if kubeconfig:
        return load_kubeconfig(kubeconfig, context=context)
    if os.environ.get("KUBECONFIG") or (Path.home() / ".kube" / "config").exists():
        return load_kubeconfig(context=context)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster_config()
    raise ConfigError("no configuration: set KUBECONFIG, create ~/.kube/config, or run in a pod")
