"""What a request is about: verb, group, version, namespace, resource, name, subresource (upstream:
apiserver/pkg/endpoints/request/requestinfo.go). Every filter after it (authorization, limits, metrics,
audit) and the resource handlers read this, so the path is parsed once."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote

API_PREFIXES = ("api", "apis")
# Namespace subresources that are the namespace itself, not a resource inside it.
_NAMESPACE_SUBRESOURCES = {"status", "finalize"}


@dataclass
class RequestInfo:
    path: str
    verb: str  # get list watch create update patch delete deletecollection, or the lowercased HTTP method
    is_resource_request: bool = False
    api_prefix: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)

    @property
    def is_long_running(self) -> bool:
        return self.verb == "watch" or self.subresource in ("log", "exec", "attach", "portforward", "proxy")

    @property
    def is_mutating(self) -> bool:
        return self.verb in ("create", "update", "patch", "delete", "deletecollection")


def _is_watch(query: dict[str, str]) -> bool:
    return query.get("watch", "").lower() in ("true", "1")


def request_info(method: str, raw_path: str, query: dict[str, str]) -> RequestInfo:
    """Parse a request line into a RequestInfo."""
    path = raw_path.split("?", 1)[0]
    method = method.upper()
    info = RequestInfo(path=path, verb=method.lower())
    parts = [unquote(p) for p in path.strip("/").split("/") if p != ""]
    if not parts or parts[0] not in API_PREFIXES:
        return info
    info.api_prefix = parts[0]
    rest = parts[1:]
    if info.api_prefix == "apis":
        if not rest:
            return info
        info.api_group = rest[0]
        rest = rest[1:]
    if not rest:
        return info
    info.api_version = rest[0]
    rest = rest[1:]
    if not rest:
        return info  # discovery of one group/version

    info.is_resource_request = True
    verb = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    info.verb = verb.get(method, method.lower())
    # The legacy /watch/ prefix.
    if rest[0] == "watch" and method == "GET":
        info.verb = "watch"
        rest = rest[1:]
        if not rest:
            info.is_resource_request = False
            return info

    if rest[0] == "namespaces":
        if len(rest) > 1:
            info.namespace = rest[1]
            # /namespaces/{ns}/{resource}... unless it is /namespaces/{name}/status or /finalize
            if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
                rest = rest[2:]
    info.parts = rest
    info.resource = rest[0]
    if len(rest) >= 2:
        info.name = rest[1]
    if len(rest) >= 3:
        info.subresource = rest[2]
    if info.resource == "namespaces" and info.namespace and not info.name:
        # /api/v1/namespaces/{name}: the namespace object itself
        info.name = info.namespace
    if info.resource == "namespaces":
        info.namespace = ""

    if info.verb == "get" and not info.name:
        info.verb = "watch" if _is_watch(query) else "list"
    elif info.verb == "get" and _is_watch(query) and not info.subresource:
        info.verb = "watch"
    elif info.verb == "delete" and not info.name:
        info.verb = "deletecollection"
    return info
