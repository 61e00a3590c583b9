"""The TokenRequest API, `POST .../serviceaccounts/<name>/token` (upstream: pkg/registry/core/serviceaccount/
storage/token.go `TokenREST.Create`, with pkg/apis/authentication's defaulting and validation): a bound token
for a service account, for the audiences asked (the API audiences by default), valid for
`spec.expirationSeconds`, optionally bound to a Pod, Secret or Node so that it dies with that object."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ...api import errors
from ...api.meta import Object, rfc3339
from ..authn.claims import EXPIRATION_EXTENSION_SECONDS, WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS, claims
from ..authn.options import Authentication
from ..authn.serviceaccount import ISSUED_CREDENTIAL_ID_ANNOTATION, credential_id_for_jti
from ..warning import add_audit_annotation, add_warning
from .admit import CreateValidation
from .rest import RESTStore

GROUP = "authentication.k8s.io"
KIND = "TokenRequest"
DEFAULT_EXPIRATION_SECONDS = 60 * 60
MIN_EXPIRATION_SECONDS = 10 * 60
MAX_EXPIRATION_SECONDS = 1 << 32


def validate_token_request(req: Object) -> list[errors.FieldError]:
    """upstream: ValidateTokenRequest."""
    seconds = req["spec"]["expirationSeconds"]
    errs = []
    if seconds < MIN_EXPIRATION_SECONDS:
        errs.append(
            errors.invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")
        )
    if seconds > MAX_EXPIRATION_SECONDS:
        errs.append(
            errors.invalid("spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds")
        )
    return errs


def _gvk_string(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


class TokenREST:
    def __init__(self, rest: Callable[[str, str], RESTStore], authentication: Authentication) -> None:
        self.rest = rest
        self.authentication = authentication

    async def create(self, namespace: str, name: str, req: Object, validate: CreateValidation | None = None) -> Object:
        """The TokenRequest answered: `req` with its metadata filled in and status.token set. `validate` is
        validating admission, called once the request is defaulted and valid, before the bound object is looked
        up (upstream's createValidation)."""
        md = req.setdefault("metadata", {})
        if md.get("name") and md["name"] != name:
            raise errors.invalid_object(KIND, name, [errors.invalid("metadata.name", md["name"],
                                        "must match the service account name if specified")], GROUP)  # fmt: skip
        if md.get("namespace") and md["namespace"] != namespace:
            raise errors.invalid_object(KIND, name, [errors.invalid("metadata.namespace", md["namespace"],
                                        "must match the service account namespace if specified")], GROUP)  # fmt: skip
        sa = await self.rest("v1", "serviceaccounts").get(namespace, name)
        auth = self.authentication
        spec: dict[str, Any] = req.setdefault("spec", {})
        if not spec.get("audiences"):
            spec["audiences"] = list(auth.api_audiences)
        if spec.get("expirationSeconds") is None:
            spec["expirationSeconds"] = DEFAULT_EXPIRATION_SECONDS
        md["name"] = md.get("name") or name
        md["namespace"] = md.get("namespace") or namespace
        now = time.time()
        md["creationTimestamp"] = rfc3339()
        req.pop("status", None)
        errs = validate_token_request(req)
        if errs:
            raise errors.invalid_object(KIND, "", errs, GROUP)
        if validate is not None:
            await validate(req)

        pod = node = secret = None
        ref = spec.get("boundObjectRef")
        if ref:
            api_version, kind, ref_name = ref.get("apiVersion") or "", ref.get("kind") or "", ref.get("name") or ""
            group = api_version.rpartition("/")[0]
            uid = ""
            if group == "" and kind == "Pod":
                pod = await self.rest("v1", "pods").get(namespace, ref_name)
                if (pod.get("spec") or {}).get("serviceAccountName") != name:
                    raise errors.bad_request(
                        f'cannot bind token for serviceaccount "{name}" to pod running with different serviceaccount '
                        "name."
                    )
                uid = pod["metadata"].get("uid", "")
                node_name = (pod.get("spec") or {}).get("nodeName")
                if node_name:
                    try:
                        node = await self.rest("v1", "nodes").get("", node_name)
                    except errors.StatusError as err:
                        if err.code != 404:
                            raise
                        # the node's name still tells who reads the token what node the pod is on
                        node = {"metadata": {"name": node_name}}
            elif group == "" and kind == "Node":
                node = await self.rest("v1", "nodes").get("", ref_name)
                uid = node["metadata"].get("uid", "")
            elif group == "" and kind == "Secret":
                secret = await self.rest("v1", "secrets").get(namespace, ref_name)
                uid = secret["metadata"].get("uid", "")
            else:
                raise errors.bad_request(f"cannot bind token to object of type {_gvk_string(api_version, kind)}")
            if ref.get("uid") and ref["uid"] != uid:
                raise errors.conflict(
                    kind, ref_name,
                    f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. The "
                    "object might have been deleted and then recreated",
                    group,
                )  # fmt: skip

        max_seconds = int(auth.options.service_account_max_token_expiration)
        if max_seconds > 0 and spec["expirationSeconds"] > max_seconds:
            add_warning(
                f"requested expiration of {spec['expirationSeconds']} seconds shortened to {max_seconds} seconds"
            )
            spec["expirationSeconds"] = max_seconds

        # A projected token of the admission plugin's tell-tale expiry is made valid for a year; its use after
        # the hour is only flagged (the safe rollout of time-bound tokens).
        warn_after = 0
        exp = spec["expirationSeconds"]
        if (auth.options.service_account_extend_token_expiration and pod is not None
                and exp == WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS
                and all(a in auth.api_audiences for a in spec["audiences"])):  # fmt: skip
            warn_after, exp = exp, EXPIRATION_EXTENSION_SECONDS
        registered, private = claims(sa, pod, secret, node, exp, warn_after, spec["audiences"], now)
        token = auth.generator.generate_token(registered, private)
        req["status"] = {
            "token": token,
            "expirationTimestamp": rfc3339_at(now + spec["expirationSeconds"]),
        }
        add_audit_annotation(ISSUED_CREDENTIAL_ID_ANNOTATION, credential_id_for_jti(registered["jti"]))
        if spec.get("boundObjectRef") is None:
            spec.pop("boundObjectRef", None)  # a nil pointer, left out as Go's omitempty does
        # in the order Go writes a TokenRequest's fields
        meta = {"name": md.pop("name"), "namespace": md.pop("namespace"), **md}
        return {"kind": KIND, "apiVersion": f"{GROUP}/v1", "metadata": meta, "spec": spec, "status": req["status"]}


def rfc3339_at(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
