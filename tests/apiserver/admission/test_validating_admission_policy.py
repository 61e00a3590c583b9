"""ValidatingAdmissionPolicy through a real API server and kubectl: a policy and its binding deny with upstream's
message, messageExpression and reason, params from a ConfigMap, the Warn action, matchConditions, a binding's
namespaceSelector, expressions that do not compile refused at create, and the `authorizer` in expressions. Then
table-driven unit tests of matching (rules, scopes, subresources, excludes, matchPolicy, selectors).

The server runs with `--authorization-mode=AlwaysDeny`: the test client is in system:masters and may do
anything, while any other identity an expression asks about is refused."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyk8s.api import errors
from pyk8s.apiserver.admission.policy import matching
from pyk8s.apiserver.admission.policy.compile import BOOL_RESULT, Compiler, Context
from pyk8s.cel.environment import CompileError, EvalError
from pyk8s.controllers.validatingadmissionpolicystatus import needs_status
from pyk8s.testing.cluster import APIServerProcess


@pytest.fixture(scope="module")
def server() -> Iterator[APIServerProcess]:
    proc = APIServerProcess(extra_args=("--authorization-mode=AlwaysDeny",)).start()
    for ns in ("vap", "vap-prod", "vap-dev"):
        proc.create_namespace(ns)
    proc.kubectl("label", "namespace", "vap-prod", "env=prod", check=True)
    yield proc
    proc.cleanup()


def policy(name: str, validations: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    rules = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
              "resources": ["deployments"]}]  # fmt: skip
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": rules}, "validations": validations, **spec}}  # fmt: skip


def binding(name: str, policy_name: str, actions: list[str], namespace: str = "vap", **spec: Any) -> dict[str, Any]:
    # Each test's binding applies in its own namespace only, so that tests do not see each other's policies.
    spec.setdefault("matchResources", {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}})  # fmt: skip
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": {"policyName": policy_name, "validationActions": actions, **spec}}  # fmt: skip


def apply(server: APIServerProcess, *objects: dict[str, Any]) -> None:
    server.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
                   check=True)  # fmt: skip


def delete(server: APIServerProcess, *objects: dict[str, Any]) -> None:
    for o in objects:
        kind = o["kind"].lower()
        server.kubectl("delete", kind, o["metadata"]["name"], "--ignore-not-found", check=True)


def deployment(name: str, replicas: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, **({"labels": labels} if labels else {})},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}  # fmt: skip


def eventually(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Policies reach admission through the watch caches: retry until `check` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def create(server: APIServerProcess, namespace: str, obj: dict[str, Any]) -> Any:
    return server.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(obj))


def test_policy_denies_with_upstreams_message(server: APIServerProcess) -> None:
    p = policy("max-replicas", [{"expression": "object.spec.replicas <= 5"}])
    b = binding("max-replicas-binding", "max-replicas", ["Deny"])
    apply(server, p, b)
    try:

        def refused() -> None:
            # kubectl prints a 422 with causes as upstream's documentation shows it.
            res = create(server, "vap", deployment("web", 6))
            assert res.returncode != 0, res.stdout
            assert res.stderr.strip() == (
                "The deployments \"web\" is invalid: : ValidatingAdmissionPolicy 'max-replicas' with binding "
                "'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"
            )

        eventually(refused)
        res = create(server, "vap", deployment("small", 2))
        assert res.returncode == 0, res.stderr
        # The Status: reason Invalid (no reason given), code 422, the message repeated as a cause.
        status, body = server.request("POST", "/apis/apps/v1/namespaces/vap/deployments", deployment("web", 7))
        assert status == 422
        assert isinstance(body, dict)
        assert body["reason"] == "Invalid"
        assert body["message"] == (
            "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding "
            "'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"
        )
        assert body["details"]["causes"] == [{"message": body["message"].partition("is forbidden: ")[2]}]
        # Updates are checked too; the scale subresource is another resource (`deployments/scale`), unmatched.
        res = server.kubectl("patch", "-n", "vap", "deployment/small", "-p", '{"spec":{"replicas":9}}')
        assert res.returncode != 0 and "denied request" in res.stderr
        res = server.kubectl("scale", "-n", "vap", "deployment/small", "--replicas=9")
        assert res.returncode == 0, res.stderr
    finally:
        delete(server, b, p)
        server.kubectl("delete", "-n", "vap", "deployment", "--all")


def test_message_expression_and_reason(server: APIServerProcess) -> None:
    p = policy("msg", [{"expression": "object.spec.replicas <= 5", "reason": "Forbidden", "message": "static",
                        "messageExpression": "'replicas ' + string(object.spec.replicas) + ' is more than 5'"}])  # fmt: skip
    b = binding("msg-binding", "msg", ["Deny"])
    apply(server, p, b)
    try:

        def refused() -> None:
            status, body = server.request("POST", "/apis/apps/v1/namespaces/vap/deployments", deployment("web", 8))
            assert status == 403, body
            assert isinstance(body, dict)
            assert body["reason"] == "Forbidden"
            assert body["message"] == (
                "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'msg' with binding 'msg-binding' "
                "denied request: replicas 8 is more than 5"
            )

        eventually(refused)
    finally:
        delete(server, b, p)


def test_params_from_a_configmap(server: APIServerProcess) -> None:
    p = policy("param-replicas", [{"expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                                   "messageExpression": "'at most ' + params.data.maxReplicas + ' replicas'"}],
               paramKind={"apiVersion": "v1", "kind": "ConfigMap"})  # fmt: skip
    b = binding("param-binding", "param-replicas", ["Deny"],
                paramRef={"name": "limits", "parameterNotFoundAction": "Deny"})  # fmt: skip
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits", "namespace": "vap"},
          "data": {"maxReplicas": "3"}}  # fmt: skip
    apply(server, p, b)
    try:

        def no_params() -> None:
            res = create(server, "vap", deployment("web", 1))
            assert res.returncode != 0
            assert ("ValidatingAdmissionPolicy 'param-replicas' with binding 'param-binding' denied request: failed to "
                    "configure binding: no params found for policy binding with `Deny` parameterNotFoundAction") in res.stderr  # fmt: skip

        eventually(no_params)
        apply(server, cm)

        def too_many() -> None:
            res = create(server, "vap", deployment("web", 4))
            assert res.returncode != 0
            assert "denied request: at most 3 replicas" in res.stderr

        eventually(too_many)
        assert create(server, "vap", deployment("web", 3)).returncode == 0
    finally:
        delete(server, b, p)
        server.kubectl("delete", "-n", "vap", "deployment", "--all")
        server.kubectl("delete", "-n", "vap", "configmap", "limits", "--ignore-not-found")


def test_params_of_a_custom_resource(server: APIServerProcess) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "limits.vap.example.com"},
           "spec": {"group": "vap.example.com", "scope": "Cluster",
                    "names": {"plural": "limits", "singular": "limit", "kind": "Limit"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"max": {"type": "integer"}}}}}]}}  # fmt: skip
    server.apply_crds(json.dumps(crd), "limits.vap.example.com")
    apply(server, {"apiVersion": "vap.example.com/v1", "kind": "Limit", "metadata": {"name": "small"}, "max": 2})
    p = policy("crd-param", [{"expression": "object.spec.replicas <= params.max",
                              "messageExpression": "'at most ' + string(params.max) + ' replicas'"}],
               paramKind={"apiVersion": "vap.example.com/v1", "kind": "Limit"})  # fmt: skip
    b = binding("crd-param-binding", "crd-param", ["Deny"], paramRef={"name": "small", "parameterNotFoundAction": "Deny"})  # fmt: skip
    apply(server, p, b)
    try:

        def refused() -> None:
            res = create(server, "vap", deployment("web", 3))
            assert res.returncode != 0
            assert "with binding 'crd-param-binding' denied request: at most 2 replicas" in res.stderr

        eventually(refused)
        table = server.kubectl("get", "validatingadmissionpolicybinding", "crd-param-binding", check=True).stdout
        assert table.splitlines()[1].split()[:3] == ["crd-param-binding", "crd-param", "*/small"]
    finally:
        delete(server, b, p)


def test_warn_action_is_a_kubectl_warning(server: APIServerProcess) -> None:
    p = policy("warn-replicas", [{"expression": "object.spec.replicas <= 5", "message": "too many replicas"}])
    b = binding("warn-binding", "warn-replicas", ["Warn"])
    apply(server, p, b)
    try:

        def warned() -> None:
            res = create(server, "vap", deployment("web", 6))
            assert res.returncode == 0, res.stderr
            assert ("Warning: Validation failed for ValidatingAdmissionPolicy 'warn-replicas' with binding "
                    "'warn-binding': too many replicas") in res.stderr  # fmt: skip
            server.kubectl("delete", "-n", "vap", "deployment", "web")

        eventually(warned)
    finally:
        delete(server, b, p)
        server.kubectl("delete", "-n", "vap", "deployment", "--all")


def test_match_conditions(server: APIServerProcess) -> None:
    p = policy("conditional", [{"expression": "object.spec.replicas <= 5"}],
               matchConditions=[{"name": "not-exempt",
                                 "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}])  # fmt: skip
    b = binding("conditional-binding", "conditional", ["Deny"])
    apply(server, p, b)
    try:
        eventually(lambda: _assert_refused(create(server, "vap", deployment("plain", 9))))
        res = create(server, "vap", deployment("exempt", 9, {"exempt": "yes"}))
        assert res.returncode == 0, res.stderr
    finally:
        delete(server, b, p)
        server.kubectl("delete", "-n", "vap", "deployment", "--all")


def _assert_refused(res: Any) -> None:
    assert res.returncode != 0 and "denied request" in res.stderr, (res.stdout, res.stderr)


def test_binding_namespace_selector(server: APIServerProcess) -> None:
    p = policy("prod-only", [{"expression": "object.spec.replicas >= 2", "message": "prod runs two replicas"}])
    b = binding("prod-only-binding", "prod-only", ["Deny"],
                matchResources={"namespaceSelector": {"matchLabels": {"env": "prod"}}})  # fmt: skip
    apply(server, p, b)
    try:
        eventually(lambda: _assert_refused(create(server, "vap-prod", deployment("single", 1))))
        res = create(server, "vap-dev", deployment("single", 1))
        assert res.returncode == 0, res.stderr
    finally:
        delete(server, b, p)
        for ns in ("vap-prod", "vap-dev"):
            server.kubectl("delete", "-n", ns, "deployment", "--all")


def test_expressions_that_do_not_compile_are_refused(server: APIServerProcess) -> None:
    p = policy("broken", [{"expression": "object.spec.replicas <="}, {"expression": "object.spec.replicas"},
                          {"expression": "true", "messageExpression": "1"}],
               variables=[{"name": "x", "expression": "variables.nope"}])  # fmt: skip
    res = server.kubectl("create", "-f", "-", input=json.dumps(p))
    assert res.returncode != 0
    assert 'The ValidatingAdmissionPolicy "broken" is invalid:' in res.stderr
    assert ('spec.validations[0].expression: Invalid value: "object.spec.replicas <=": compilation failed: '
            "ERROR: <input>:1:24: Syntax error: mismatched input '<EOF>'") in res.stderr  # fmt: skip
    assert " | object.spec.replicas <=\n | .......................^" in res.stderr
    assert 'spec.validations[1].expression: Invalid value: "object.spec.replicas": must evaluate to bool but got dyn' in res.stderr  # fmt: skip
    assert 'spec.validations[2].messageExpression: Invalid value: "1": must evaluate to string but got int' in res.stderr  # fmt: skip
    assert "spec.variables[0].expression: Invalid value: \"variables.nope\": compilation failed: ERROR: <input>:1:10: undefined field 'nope'" in res.stderr  # fmt: skip
    res = server.kubectl("create", "-f", "-", input=json.dumps(binding("b", "p", ["Deny", "Warn"])))
    assert res.returncode != 0
    assert "spec.validationActions: Invalid value:" in res.stderr
    assert "must not contain both Deny and Warn (repeating the same validation failure information" in res.stderr


def test_authorizer_in_expressions(server: APIServerProcess) -> None:
    p = policy("authz", [
        {"expression": "authorizer.requestResource.check('create').allowed()", "message": "requester may not"},
        {"expression": "authorizer.serviceAccount('vap', 'robot').group('apps').resource('deployments')"
                       ".namespace('vap').check('create').allowed()",
         "message": "robot may not create deployments"},
    ])  # fmt: skip
    b = binding("authz-binding", "authz", ["Deny"])
    apply(server, p, b)
    try:
        # The requester (system:masters) may create deployments; the service account may not (AlwaysDeny).
        def refused() -> None:
            res = create(server, "vap", deployment("web", 1))
            assert res.returncode != 0
            assert "denied request: robot may not create deployments" in res.stderr, res.stderr

        eventually(refused)
    finally:
        delete(server, b, p)
        server.kubectl("delete", "-n", "vap", "deployment", "--all")


def test_policy_defaults_and_generation(server: APIServerProcess) -> None:
    p = policy("defaults", [{"expression": "true"}])
    apply(server, p)
    try:
        out = json.loads(
            server.kubectl("get", "validatingadmissionpolicy", "defaults", "-o", "json", check=True).stdout
        )
        spec = out["spec"]
        assert spec["failurePolicy"] == "Fail"
        mc = spec["matchConstraints"]
        assert (mc["matchPolicy"], mc["namespaceSelector"], mc["objectSelector"]) == ("Equivalent", {}, {})
        assert mc["resourceRules"][0]["scope"] == "*"
        assert out["metadata"]["generation"] == 1
        table = server.kubectl("get", "validatingadmissionpolicy", "defaults", check=True).stdout.splitlines()
        assert table[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
        assert table[1].split()[:3] == ["defaults", "1", "<unset>"]
    finally:
        delete(server, p)


# -- unit tests ---------------------------------------------------------------------------------------------------


def _request(**kw: Any) -> matching.Request:
    base: dict[str, Any] = {"operation": "CREATE", "group": "apps", "version": "v1", "resource": "deployments",
                            "namespace": "ns", "name": "web", "kind": "Deployment"}  # fmt: skip
    base.update(kw)
    return matching.Request(**base)


def _rule(**kw: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}
    rule.update(kw)
    return rule


RULE_CASES = [
    # (rule, request overrides, matches)
    (_rule(), {}, True),
    (_rule(operations=["UPDATE"]), {}, False),
    (_rule(operations=["CREATE", "UPDATE"]), {"operation": "UPDATE"}, True),
    (_rule(apiGroups=[""]), {}, False),
    (_rule(apiGroups=["apps"], apiVersions=["v1beta1"]), {}, False),
    (_rule(resources=["deployments"]), {}, True),
    (_rule(resources=["deployments"]), {"subresource": "scale"}, False),
    (_rule(resources=["deployments/scale"]), {"subresource": "scale"}, True),
    (_rule(resources=["deployments/*"]), {"subresource": "status"}, True),
    (_rule(resources=["*/status"]), {"subresource": "status"}, True),
    (_rule(resources=["*/status"]), {}, False),
    (_rule(resources=["*"]), {"subresource": "status"}, False),
    (_rule(resources=["*/*"]), {"subresource": "status"}, True),
    (_rule(scope="Namespaced"), {}, True),
    (_rule(scope="Cluster"), {}, False),
    (_rule(scope="Cluster"), {"namespace": "", "group": "", "resource": "nodes"}, True),
    (_rule(scope="Namespaced"), {"namespace": "", "group": "", "resource": "nodes"}, False),
    # A namespace is cluster-scoped even when the request names it as its namespace.
    (_rule(scope="Cluster"), {"namespace": "ns", "group": "", "resource": "namespaces", "name": "ns"}, True),
    (_rule(scope="Namespaced"), {"namespace": "ns", "group": "", "resource": "namespaces", "name": "ns"}, False),
    (_rule(scope="Bogus"), {}, False),
]


@pytest.mark.parametrize(("rule", "overrides", "expected"), RULE_CASES)
def test_rule_matches(rule: dict[str, Any], overrides: dict[str, Any], expected: bool) -> None:
    assert matching.rule_matches(rule, _request(**overrides)) is expected


def _no_equivalents(group: str, version: str, resource: str) -> list[tuple[str, str, str, str]]:
    return []


def _hpa_equivalents(group: str, version: str, resource: str) -> list[tuple[str, str, str, str]]:
    if (group, resource) == ("autoscaling", "horizontalpodautoscalers"):
        return [("autoscaling", "v2", resource, "HorizontalPodAutoscaler"),
                ("autoscaling", "v1", resource, "HorizontalPodAutoscaler")]  # fmt: skip
    return []


def _labels(name: str) -> dict[str, str] | None:
    known = {"ns": {"env": "prod"}, "dev": {"env": "dev"}}
    if name not in known:
        raise errors.not_found("namespaces", name)
    return known[name]


HPA_V1 = {"group": "autoscaling", "version": "v1", "resource": "horizontalpodautoscalers",
          "kind": "HorizontalPodAutoscaler"}  # fmt: skip
V2_RULE = _rule(apiGroups=["autoscaling"], apiVersions=["v2"], resources=["horizontalpodautoscalers"])

MATCH_CASES = [
    # (criteria, request overrides, equivalents, expected match (group, version, resource) or None)
    ({"resourceRules": [_rule()]}, {}, _no_equivalents, ("apps", "v1", "deployments")),
    ({"resourceRules": [_rule(resourceNames=["other"])]}, {}, _no_equivalents, None),
    ({"resourceRules": [_rule(resourceNames=["web"])]}, {}, _no_equivalents, ("apps", "v1", "deployments")),
    (
        {"resourceRules": [_rule()], "excludeResourceRules": [_rule(resources=["deployments"])]},
        {},
        _no_equivalents,
        None,
    ),
    (
        {"resourceRules": [_rule()], "excludeResourceRules": [_rule(resources=["pods"])]},
        {},
        _no_equivalents,
        ("apps", "v1", "deployments"),
    ),
    # matchPolicy: Equivalent matches another version of the resource and reports it; Exact does not.
    (
        {"resourceRules": [V2_RULE], "matchPolicy": "Equivalent"},
        HPA_V1,
        _hpa_equivalents,
        ("autoscaling", "v2", "horizontalpodautoscalers"),
    ),
    ({"resourceRules": [V2_RULE], "matchPolicy": "Exact"}, HPA_V1, _hpa_equivalents, None),
    # Selectors: namespaces by their labels, objects by theirs or the old object's.
    (
        {"resourceRules": [_rule()], "namespaceSelector": {"matchLabels": {"env": "prod"}}},
        {},
        _no_equivalents,
        ("apps", "v1", "deployments"),
    ),
    (
        {"resourceRules": [_rule()], "namespaceSelector": {"matchLabels": {"env": "prod"}}},
        {"namespace": "dev"},
        _no_equivalents,
        None,
    ),
    (
        {
            "resourceRules": [_rule()],
            "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
        },
        {},
        _no_equivalents,
        None,
    ),
    # Cluster-scoped requests ignore the namespace selector.
    (
        {"resourceRules": [_rule()], "namespaceSelector": {"matchLabels": {"env": "prod"}}},
        {"namespace": "", "group": "", "resource": "nodes"},
        _no_equivalents,
        ("", "v1", "nodes"),
    ),
    # A namespace being created is matched by its own labels.
    (
        {"resourceRules": [_rule()], "namespaceSelector": {"matchLabels": {"team": "a"}}},
        {
            "group": "",
            "resource": "namespaces",
            "namespace": "",
            "name": "new",
            "object": {"metadata": {"name": "new", "labels": {"team": "a"}}},
        },
        _no_equivalents,
        ("", "v1", "namespaces"),
    ),
    (
        {"resourceRules": [_rule()], "objectSelector": {"matchLabels": {"app": "x"}}},
        {"object": {"metadata": {"labels": {"app": "x"}}}},
        _no_equivalents,
        ("apps", "v1", "deployments"),
    ),
    (
        {"resourceRules": [_rule()], "objectSelector": {"matchLabels": {"app": "x"}}},
        {"object": {"metadata": {"labels": {"app": "y"}}}, "old_object": {"metadata": {"labels": {"app": "x"}}}},
        _no_equivalents,
        ("apps", "v1", "deployments"),
    ),
    (
        {"resourceRules": [_rule()], "objectSelector": {"matchLabels": {"app": "x"}}},
        {"object": {"metadata": {}}},
        _no_equivalents,
        None,
    ),
]


@pytest.mark.parametrize(("criteria", "overrides", "equivalents", "expected"), MATCH_CASES)
def test_matches(criteria: dict[str, Any], overrides: dict[str, Any], equivalents: Any, expected: Any) -> None:
    found = matching.matches(criteria, _request(**overrides), _labels, equivalents)
    assert (None if found is None else (found.group, found.version, found.resource)) == expected


def test_missing_namespace_is_an_error_only_when_the_rules_match() -> None:
    criteria = {"resourceRules": [_rule(resources=["deployments"])], "namespaceSelector": {"matchLabels": {"a": "b"}}}
    with pytest.raises(errors.StatusError) as err:
        matching.matches(criteria, _request(namespace="gone"), _labels, _no_equivalents)
    assert err.value.code == 404
    assert matching.matches(criteria, _request(namespace="gone", resource="pods"), _labels, _no_equivalents) is None


def test_variables_are_typed_and_computed_when_read() -> None:
    compiler = Compiler(False)
    assert compiler.add_variable("replicas", "object.spec.replicas") == ""
    assert compiler.add_variable("big", "variables.replicas > 5") == ""
    assert compiler.add_variable("broken", "object.missing.field") == ""
    program = compiler.compile("!variables.big", BOOL_RESULT)  # a bool variable: no `== true` needed
    assert Context({"object": {"spec": {"replicas": 3}}}, compiler.variables).evaluate(program) is True
    # A variable that fails only fails the expressions that read it.
    reads_broken = compiler.compile("variables.broken == 1", BOOL_RESULT)
    ctx = Context({"object": {"spec": {"replicas": 9}}}, compiler.variables)
    assert ctx.evaluate(program) is False
    with pytest.raises(EvalError, match="no such key: missing"):
        ctx.evaluate(reads_broken)
    with pytest.raises(CompileError, match="undefined field 'nope'"):
        compiler.compile("variables.nope", BOOL_RESULT)


def test_status_controller_writes_once_per_generation() -> None:
    assert needs_status({"metadata": {"generation": 1}})
    assert needs_status({"metadata": {"generation": 2}, "status": {"observedGeneration": 1, "typeChecking": {}}})
    assert not needs_status({"metadata": {"generation": 2}, "status": {"observedGeneration": 2, "typeChecking": {}}})
