"""Service-account tokens through real clients: `kubectl create token` and a request with the token, what a
token says, and each way it stops working (expired, another key or issuer, its service account or the pod it is
bound to gone), with upstream's messages as TokenReview reports them."""

from __future__ import annotations

import base64
import datetime as dt
import json
import time
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec

from pyk8s.apiserver.authn.claims import claims
from pyk8s.apiserver.authn.jwt import JWTTokenGenerator, read_signing_key
from pyk8s.apiserver.authn.legacy import legacy_claims

from .conftest import ISSUER, payload_of, request_as, token_kubeconfig, token_review, whoami

SA_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]


def create_sa(cluster, name: str, namespace: str = "default") -> dict[str, Any]:
    cluster.kubectl("create", "serviceaccount", name, "-n", namespace, check=True)
    return json.loads(cluster.kubectl("get", "sa", name, "-n", namespace, "-o", "json", check=True).stdout)


def create_token(cluster, sa: str, *args: str) -> str:
    return cluster.kubectl("create", "token", sa, "-n", "default", *args, check=True).stdout.strip()


def server_signer(cluster, issuer: str = ISSUER) -> JWTTokenGenerator:
    return JWTTokenGenerator(issuer, read_signing_key(cluster.data_dir / "pki" / "sa.key"))


def test_kubectl_create_token_then_requests_with_it_are_the_service_account(cluster):
    sa = create_sa(cluster, "robot")
    token = create_token(cluster, "robot")
    info = whoami(cluster, token)
    assert info["username"] == "system:serviceaccount:default:robot"
    assert info["uid"] == sa["metadata"]["uid"]
    assert info["groups"] == SA_GROUPS
    claims_ = payload_of(token)
    assert info["extra"] == {"authentication.kubernetes.io/credential-id": [f"JTI={claims_['jti']}"]}
    assert claims_["iss"] == ISSUER and claims_["aud"] == [ISSUER]
    assert claims_["sub"] == "system:serviceaccount:default:robot"
    assert claims_["exp"] - claims_["iat"] == 3600 and claims_["nbf"] == claims_["iat"]
    assert claims_["kubernetes.io"] == {"namespace": "default",
                                        "serviceaccount": {"name": "robot", "uid": sa["metadata"]["uid"]}}  # fmt: skip
    assert list(claims_) == sorted(claims_)  # Go writes the merged claims map in key order
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header["alg"] == "RS256" and header["kid"]
    status, _ = request_as(cluster, token)
    assert status == 200
    # the table kubectl prints
    out = cluster.kubectl("--kubeconfig", str(token_kubeconfig(cluster, token)), "auth", "whoami", check=True).stdout
    rows = [line.split(None, 1) for line in out.splitlines()]
    assert rows[:4] == [["ATTRIBUTE", "VALUE"], ["Username", "system:serviceaccount:default:robot"],
                        ["UID", sa["metadata"]["uid"]], ["Groups", "[" + " ".join(SA_GROUPS) + "]"]]  # fmt: skip


def test_token_request_expiration_audiences_and_their_errors(cluster):
    create_sa(cluster, "durations")
    short = cluster.kubectl("create", "token", "durations", "--duration", "5m")
    assert short.returncode != 0
    assert 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 300: ' \
           "may not specify a duration less than 10 minutes" in short.stderr  # fmt: skip
    ten = payload_of(create_token(cluster, "durations", "--duration", "10m"))
    assert ten["exp"] - ten["iat"] == 600
    # longer than --service-account-max-token-expiration: shortened, with upstream's warning
    long = cluster.kubectl("create", "token", "durations", "--duration", "48h")
    assert long.returncode == 0
    assert "requested expiration of 172800 seconds shortened to 86400 seconds" in long.stderr
    assert payload_of(long.stdout.strip())["exp"] - payload_of(long.stdout.strip())["iat"] == 86400
    # a token for another audience is no good for the API server, but is for its audience
    foreign = create_token(cluster, "durations", "--audience", "vault")
    assert request_as(cluster, foreign)[0] == 401
    review = token_review(cluster, foreign)
    assert review == {
        "user": {},
        "error": f'token audiences ["vault"] is invalid for the target audiences ["{ISSUER}"]',
    }
    review = token_review(cluster, foreign, ["vault", "other"])
    assert review["authenticated"] is True and review["audiences"] == ["vault"]
    assert review["user"]["username"] == "system:serviceaccount:default:durations"
    # the service account must exist
    missing = cluster.kubectl("create", "token", "nobody")
    assert missing.returncode != 0 and 'serviceaccounts "nobody" not found' in missing.stderr


def test_expired_foreign_and_unknown_tokens_are_401(cluster):
    sa = create_sa(cluster, "victim")
    signer = server_signer(cluster)
    registered, private = claims(sa, None, None, None, 600, 0, [ISSUER], now=time.time() - 3600)
    expired = signer.generate_token(registered, private)
    status, body = request_as(cluster, expired)
    assert (status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
    assert token_review(cluster, expired)["error"] == "service account token has expired"
    # signed by a key the server does not know
    registered, private = claims(sa, None, None, None, 600, 0, [ISSUER])
    stranger = JWTTokenGenerator(ISSUER, ec.generate_private_key(ec.SECP256R1())).generate_token(registered, private)
    assert request_as(cluster, stranger)[0] == 401
    assert token_review(cluster, stranger)["error"] == "invalid signature, no keys found"
    # another issuer's token is no token of ours at all
    other = server_signer(cluster, "https://elsewhere.example").generate_token(registered, private)
    assert request_as(cluster, other)[0] == 401
    assert token_review(cluster, other)["error"] == "invalid bearer token"
    assert token_review(cluster, "not-a-token") == {"user": {}, "error": "invalid bearer token"}
    # valid until then
    good = signer.generate_token(registered, private)
    assert request_as(cluster, good)[0] == 200


def test_a_token_of_a_deleted_service_account_is_401(cluster):
    create_sa(cluster, "doomed")
    token = create_token(cluster, "doomed")
    assert whoami(cluster, token)["username"] == "system:serviceaccount:default:doomed"
    cluster.kubectl("delete", "sa", "doomed", check=True)
    assert request_as(cluster, token)[0] == 401
    assert token_review(cluster, token)["error"] == 'serviceaccounts "doomed" not found'
    again = create_sa(cluster, "doomed")  # the same name is another service account
    claim_uid = payload_of(token)["kubernetes.io"]["serviceaccount"]["uid"]
    assert token_review(cluster, token)["error"] == \
        f"service account UID ({again['metadata']['uid']}) does not match claim ({claim_uid})"  # fmt: skip


def pod(name: str, sa: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"serviceAccountName": sa, "containers": [{"name": "c", "image": "busybox"}]}})  # fmt: skip


def test_a_pod_bound_token_stops_working_when_the_pod_is_deleted(cluster):
    create_sa(cluster, "runner")
    cluster.kubectl("apply", "-f", "-", input=pod("worker", "runner"), check=True)
    uid = json.loads(cluster.kubectl("get", "pod", "worker", "-o", "json", check=True).stdout)["metadata"]["uid"]
    token = create_token(cluster, "runner", "--bound-object-kind", "Pod", "--bound-object-name", "worker")
    assert payload_of(token)["kubernetes.io"]["pod"] == {"name": "worker", "uid": uid}
    info = whoami(cluster, token)
    assert info["extra"]["authentication.kubernetes.io/pod-name"] == ["worker"]
    assert info["extra"]["authentication.kubernetes.io/pod-uid"] == [uid]
    cluster.kubectl("delete", "pod", "worker", "--grace-period=0", "--force", check=True)
    assert request_as(cluster, token)[0] == 401
    assert token_review(cluster, token)["error"] == "service account token has been invalidated"
    # a pod of another service account, and a stale UID
    cluster.kubectl("apply", "-f", "-", input=pod("other", "default-ish"), check=True)
    wrong = cluster.kubectl("create", "token", "runner", "--bound-object-kind", "Pod", "--bound-object-name", "other")
    assert 'cannot bind token for serviceaccount "runner" to pod running with different serviceaccount name.' \
        in wrong.stderr  # fmt: skip
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": "nope"}}}  # fmt: skip
    status, answer = cluster.request("POST", "/api/v1/namespaces/default/serviceaccounts/runner/token", body)
    assert (status, answer["message"]) == (404, 'secrets "nope" not found')
    body["spec"]["boundObjectRef"] = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}
    status, answer = cluster.request("POST", "/api/v1/namespaces/default/serviceaccounts/runner/token", body)
    assert (status, answer["message"]) == (400, "cannot bind token to object of type /v1, Kind=ConfigMap")


def test_a_projected_token_of_3607_seconds_lasts_a_year_but_reports_its_hour(cluster):
    create_sa(cluster, "projected")
    cluster.kubectl("apply", "-f", "-", input=pod("holder", "projected"), check=True)
    uid = json.loads(cluster.kubectl("get", "pod", "holder", "-o", "json", check=True).stdout)["metadata"]["uid"]
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3607,
                     "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "holder", "uid": uid}}}  # fmt: skip
    before = time.time()
    status, answer = cluster.request("POST", "/api/v1/namespaces/default/serviceaccounts/projected/token", body)
    assert status == 201, answer
    assert answer["kind"] == "TokenRequest" and answer["metadata"]["name"] == "projected"
    assert answer["spec"]["audiences"] == [ISSUER] and answer["spec"]["expirationSeconds"] == 3607
    claims_ = payload_of(answer["status"]["token"])
    assert claims_["exp"] - claims_["iat"] == 365 * 24 * 3600
    assert claims_["kubernetes.io"]["warnafter"] == claims_["iat"] + 3607
    expires = dt.datetime.fromisoformat(answer["status"]["expirationTimestamp"].replace("Z", "+00:00")).timestamp()
    assert before + 3600 < expires < time.time() + 3608
    body["spec"]["boundObjectRef"]["uid"] = "stale"
    status, answer = cluster.request("POST", "/api/v1/namespaces/default/serviceaccounts/projected/token", body)
    assert status == 409
    assert answer["message"] == ('Operation cannot be fulfilled on Pod "holder": the UID in the bound object reference '
                                 "(stale) does not match the UID in record. The object might have been deleted and "
                                 "then recreated")  # fmt: skip


def test_a_secret_based_legacy_token_works_while_its_secret_holds_it(cluster):
    sa = create_sa(cluster, "old-timer")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "old-timer-token", "annotations": {"kubernetes.io/service-account.name": "old-timer"}},
    }
    registered, private = legacy_claims(sa, secret)
    token = server_signer(cluster, "kubernetes/serviceaccount").generate_token(registered, private)
    secret["data"] = {"token": base64.b64encode(token.encode()).decode()}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(secret), check=True)
    info = whoami(cluster, token)
    assert (info["username"], info["uid"]) == ("system:serviceaccount:default:old-timer", sa["metadata"]["uid"])
    assert "extra" not in info
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    deadline = time.monotonic() + 10
    while True:
        got = json.loads(cluster.kubectl("get", "secret", "old-timer-token", "-o", "json", check=True).stdout)
        if got["metadata"].get("labels", {}).get("kubernetes.io/legacy-token-last-used") == today:
            break
        assert time.monotonic() < deadline, got["metadata"]
        time.sleep(0.1)
    cluster.kubectl("patch", "secret", "old-timer-token", "-p",
                    json.dumps({"data": {"token": base64.b64encode(b"something else").decode()}}), check=True)  # fmt: skip
    assert request_as(cluster, token)[0] == 401
    assert token_review(cluster, token)["error"] == "Token does not match server's copy"
    cluster.kubectl("delete", "secret", "old-timer-token", check=True)
    assert token_review(cluster, token)["error"] == "Token has been invalidated"


def test_tokenreview_through_the_python_client(cluster):
    from kubernetes import client, config

    create_sa(cluster, "reviewed")
    token = create_token(cluster, "reviewed")
    api = client.AuthenticationV1Api(config.new_client_from_config(config_file=str(cluster.kubeconfig)))
    review = api.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token)))
    assert review.status.authenticated is True
    assert review.status.user.username == "system:serviceaccount:default:reviewed"
    assert review.status.user.groups == SA_GROUPS
    assert review.status.audiences == [ISSUER]
    me = api.create_self_subject_review(client.V1SelfSubjectReview())
    assert me.status.user_info.username == "pyk8s-admin"
    from kubernetes.client.rest import ApiException

    try:
        api.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token="")))
    except ApiException as err:
        assert err.status == 400
        assert json.loads(err.body)["message"] == "token is required for TokenReview in authentication"
    else:
        raise AssertionError("an empty token was reviewed")


def test_a_token_request_in_protobuf_as_kube_controller_manager_sends_it(cluster):
    from pyk8s.api.protobuf.codec import decode_object, encode_object

    create_sa(cluster, "controller")
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {},
            "spec": {"expirationSeconds": 3600}}  # fmt: skip
    proto = "application/vnd.kubernetes.protobuf"
    status, headers, raw = cluster.raw_request("POST", "/api/v1/namespaces/default/serviceaccounts/controller/token",
                                               encode_object(body), {"Content-Type": proto, "Accept": proto})  # fmt: skip
    assert status == 201 and headers["Content-Type"] == proto
    answer = decode_object(raw)
    assert answer["kind"] == "TokenRequest" and answer["spec"]["audiences"] == [ISSUER]
    assert whoami(cluster, answer["status"]["token"])["username"] == "system:serviceaccount:default:controller"
