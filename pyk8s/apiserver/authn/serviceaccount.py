"""Service-account identities: the user name, groups and extra values a service account authenticates as
(upstream: apiserver/pkg/authentication/serviceaccount/util.go)."""

from __future__ import annotations

from dataclasses import dataclass

from ...api.validation import is_dns1123_label, is_dns1123_subdomain
from . import CREDENTIAL_ID_KEY, UserInfo

USERNAME_PREFIX = "system:serviceaccount:"
USERNAME_SEPARATOR = ":"
GROUP_PREFIX = "system:serviceaccounts:"
ALL_SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"

# Keys of a service account user's extra values (bound tokens).
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"
# The audit annotation of a TokenRequest: which credential it issued.
ISSUED_CREDENTIAL_ID_ANNOTATION = "authentication.kubernetes.io/issued-credential-id"


def make_username(namespace: str, name: str) -> str:
    return f"{USERNAME_PREFIX}{namespace}{USERNAME_SEPARATOR}{name}"


class InvalidUsername(ValueError):
    def __init__(self) -> None:
        super().__init__(f"Username must be in the form {make_username('namespace', 'name')}")


def split_username(username: str) -> tuple[str, str]:
    """(namespace, name) of a service account user name; InvalidUsername unless `make_username` could have
    made it from a valid namespace and service account name."""
    if not username.startswith(USERNAME_PREFIX):
        raise InvalidUsername()
    parts = username[len(USERNAME_PREFIX) :].split(USERNAME_SEPARATOR)
    if len(parts) != 2:
        raise InvalidUsername()
    namespace, name = parts
    if is_dns1123_label(namespace) or is_dns1123_subdomain(name):
        raise InvalidUsername()
    return namespace, name


def make_namespace_group_name(namespace: str) -> str:
    return GROUP_PREFIX + namespace


def make_group_names(namespace: str) -> tuple[str, str]:
    return ALL_SERVICE_ACCOUNTS_GROUP, make_namespace_group_name(namespace)


def credential_id_for_jti(jti: str) -> str:
    """The credential-id extra value of a token with this `jti` ("" when it has none)."""
    return f"JTI={jti}" if jti else ""


@dataclass(frozen=True)
class ServiceAccountInfo:
    """What a validated service-account token says (upstream: ServiceAccountInfo)."""

    namespace: str
    name: str
    uid: str
    pod_name: str = ""
    pod_uid: str = ""
    credential_id: str = ""
    node_name: str = ""
    node_uid: str = ""

    def user_info(self) -> UserInfo:
        extra: dict[str, tuple[str, ...]] = {}
        if self.pod_name and self.pod_uid:
            extra[POD_NAME_KEY] = (self.pod_name,)
            extra[POD_UID_KEY] = (self.pod_uid,)
        if self.credential_id:
            extra[CREDENTIAL_ID_KEY] = (self.credential_id,)
        if self.node_name:
            extra[NODE_NAME_KEY] = (self.node_name,)
            if self.node_uid:  # a node's UID is known only when the node existed when the token was issued
                extra[NODE_UID_KEY] = (self.node_uid,)
        return UserInfo(make_username(self.namespace, self.name), self.uid, make_group_names(self.namespace), extra)
