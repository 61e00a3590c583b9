"""CustomResourceDefinitions through real clients: kubectl applies a CRD and works its objects (short names,
printer columns, validation messages, defaults, unknown fields, patches, the scale and status
subresources, server-side apply), the official Python client's CustomObjectsApi lists, watches and patches
status, and deleting a CRD deletes its objects."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
import yaml
from kubernetes import client, config, watch

GROUP = "stable.example.com"

CRONTAB_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.{group}
spec:
  group: {group}
  scope: Namespaced
  names:
    plural: {plural}
    singular: {singular}
    kind: {kind}
    shortNames: [{short}]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {{}}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.labelSelector
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [cronSpec]
            properties:
              cronSpec:
                type: string
                pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){{4}}$'
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                maximum: 10
                default: 1
              mode:
                type: string
                enum: [Fast, Slow]
          status:
            type: object
            properties:
              replicas:
                type: integer
              labelSelector:
                type: string
"""


def crd_manifest(plural: str = "crontabs", kind: str = "CronTab", short: str = "ct", group: str = GROUP) -> str:
    return CRONTAB_CRD.format(plural=plural, singular=kind.lower(), kind=kind, short=short, group=group)


def crontab(name: str, **spec: Any) -> str:
    body = {"apiVersion": f"{GROUP}/v1", "kind": "CronTab", "metadata": {"name": name},
            "spec": {"cronSpec": "* * * * */5", "image": "my-cron:1", **spec}}  # fmt: skip
    return yaml.safe_dump(body)


def install(cluster, manifest: str, name: str) -> None:
    cluster.apply_crds(manifest, name)


@pytest.fixture(scope="module")
def crontabs(crd_cluster):
    install(crd_cluster, crd_manifest(), f"crontabs.{GROUP}")
    return crd_cluster


def get_json(cluster, *args: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", *args, "-o", "json", check=True).stdout)


def test_a_crd_is_established_with_its_names_and_served_in_discovery(crontabs):
    crd = get_json(crontabs, "crd", f"crontabs.{GROUP}")
    conditions = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "True"
    assert conditions["NamesAccepted"]["reason"] == "NoConflicts"
    assert conditions["Established"]["status"] == "True"
    assert conditions["Established"]["reason"] == "InitialNamesAccepted"
    assert crd["status"]["acceptedNames"]["shortNames"] == ["ct"]
    assert crd["status"]["storedVersions"] == ["v1"]
    assert crd["metadata"]["generation"] == 1
    res = crontabs.kubectl("api-resources", "--api-group", GROUP, check=True)
    assert "crontabs" in res.stdout and "ct" in res.stdout and "CronTab" in res.stdout
    status, doc = crontabs.request("GET", f"/apis/{GROUP}/v1")
    assert status == 200
    names = {r["name"] for r in doc["resources"]}  # type: ignore[index]
    assert names == {"crontabs", "crontabs/status", "crontabs/scale"}


def test_kubectl_creates_gets_and_prints_the_crds_columns(crontabs, crd_ns):
    crontabs.kubectl("create", "-n", crd_ns, "-f", "-", input=crontab("nightly", replicas=3), check=True)
    res = crontabs.kubectl("get", "ct", "-n", crd_ns, check=True)
    header, row = res.stdout.splitlines()
    assert header.split() == ["NAME", "SPEC", "REPLICAS", "AGE"]
    assert row.split()[:6] == ["nightly", "*", "*", "*", "*", "*/5"] and row.split()[6] == "3"
    # kubectl get all lists it (category all), and describe works
    assert "crontab.stable.example.com/nightly" in crontabs.kubectl("get", "all", "-n", crd_ns, check=True).stdout
    assert "Cron Spec:" in crontabs.kubectl("describe", "crontab", "nightly", "-n", crd_ns, check=True).stdout
    obj = json.loads(crontabs.kubectl("get", "crontab", "nightly", "-n", crd_ns, "-o", "json",
                                      "--show-managed-fields", check=True).stdout)  # fmt: skip
    assert obj["metadata"]["generation"] == 1
    # as upstream records a create of an unstructured object: every node it added is owned whole
    [entry] = obj["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl-create", "Update")
    assert entry["fieldsV1"] == {"f:spec": {".": {}, "f:cronSpec": {}, "f:image": {}, "f:replicas": {}}}
    assert obj["metadata"]["uid"] and obj["metadata"]["creationTimestamp"]


def test_defaults_and_unknown_fields(crontabs, crd_ns):
    body = yaml.safe_load(crontab("plain"))
    body["spec"]["color"] = "blue"  # not in the schema
    # kubectl validates strictly by default, on the server (it finds fieldValidation in /openapi/v3)
    res = crontabs.kubectl("create", "-n", crd_ns, "-f", "-", input=yaml.safe_dump(body))
    assert res.returncode != 0
    assert 'strict decoding error: unknown field "spec.color"' in res.stderr
    res = crontabs.kubectl("create", "--validate=warn", "-n", crd_ns, "-f", "-", input=yaml.safe_dump(body),
                           check=True)  # fmt: skip
    assert 'unknown field "spec.color"' in res.stderr
    obj = get_json(crontabs, "crontab", "plain", "-n", crd_ns)
    assert obj["spec"]["replicas"] == 1  # the schema's default
    assert "color" not in obj["spec"]  # pruned


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"replicas": 20}, "spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10"),
        ({"mode": "Medium"}, 'spec.mode: Unsupported value: "Medium": supported values: "Fast", "Slow"'),
        ({"replicas": "many"}, 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'),
        ({"cronSpec": "every day"}, 'spec.cronSpec: Invalid value: "every day": spec.cronSpec in body should match'),
    ],
)  # fmt: skip
def test_schema_violations_are_refused_with_upstreams_messages(crontabs, crd_ns, spec, message):
    res = crontabs.kubectl("create", "-n", crd_ns, "-f", "-", input=crontab("bad", **spec))
    assert res.returncode != 0
    assert 'The CronTab "bad" is invalid' in res.stderr
    assert message in res.stderr
    assert crontabs.kubectl("get", "crontab", "bad", "-n", crd_ns).returncode != 0  # nothing was stored


def test_patches_scale_and_the_status_subresource(crontabs, crd_ns):
    crontabs.kubectl("create", "-n", crd_ns, "-f", "-", input=crontab("job", replicas=2), check=True)
    crontabs.kubectl("patch", "crontab", "job", "-n", crd_ns, "--type=merge", "-p", '{"spec":{"image":"my-cron:2"}}',
                     check=True)  # fmt: skip
    obj = get_json(crontabs, "crontab", "job", "-n", crd_ns)
    assert obj["spec"]["image"] == "my-cron:2" and obj["metadata"]["generation"] == 2
    res = crontabs.kubectl("patch", "crontab", "job", "-n", crd_ns, "--type=strategic", "-p", '{"spec":{"image":"x"}}')
    assert res.returncode != 0
    assert "the body of the request was in an unknown format" in res.stderr
    crontabs.kubectl("scale", "crontab", "job", "-n", crd_ns, "--replicas=5", check=True)
    assert get_json(crontabs, "crontab", "job", "-n", crd_ns)["spec"]["replicas"] == 5
    # status only through /status: a main write's status is dropped, a /status write changes nothing else
    crontabs.kubectl("patch", "crontab", "job", "-n", crd_ns, "--type=merge", "-p", '{"status":{"replicas":4}}',
                     check=True)  # fmt: skip
    assert "status" not in get_json(crontabs, "crontab", "job", "-n", crd_ns)
    crontabs.kubectl("patch", "crontab", "job", "-n", crd_ns, "--subresource=status", "--type=merge", "-p",
                     '{"status":{"replicas":4,"labelSelector":"app=job"},"spec":{"image":"ignored"}}', check=True)  # fmt: skip
    obj = get_json(crontabs, "crontab", "job", "-n", crd_ns)
    assert obj["status"] == {"replicas": 4, "labelSelector": "app=job"}
    assert obj["spec"]["image"] == "my-cron:2"
    assert obj["metadata"]["generation"] == 3  # the scale bumped it; the status did not
    status, scale = crontabs.request("GET", f"/apis/{GROUP}/v1/namespaces/{crd_ns}/crontabs/job/scale")
    assert status == 200
    assert scale["spec"] == {"replicas": 5}  # type: ignore[index]
    assert scale["status"] == {"replicas": 4, "selector": "app=job"}  # type: ignore[index]


def test_server_side_apply_of_a_custom_resource(crontabs, crd_ns):
    for image in ("a:1", "a:2"):
        crontabs.kubectl("apply", "--server-side", "-n", crd_ns, "-f", "-", input=crontab("ssa", image=image),
                         check=True)  # fmt: skip
    obj = json.loads(crontabs.kubectl("get", "crontab", "ssa", "-n", crd_ns, "-o", "json", "--show-managed-fields",
                                      check=True).stdout)  # fmt: skip
    assert obj["spec"]["image"] == "a:2"
    [entry] = [e for e in obj["metadata"]["managedFields"] if e["operation"] == "Apply"]
    assert entry["manager"] == "kubectl"
    assert entry["fieldsV1"]["f:spec"] == {"f:cronSpec": {}, "f:image": {}}
    res = crontabs.kubectl("apply", "--server-side", "--field-manager=other", "-n", crd_ns, "-f", "-",
                           input=crontab("ssa", image="b:1"))  # fmt: skip
    assert res.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.image' in res.stderr


def _api(cluster) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


def test_the_python_clients_custom_objects_api_lists_watches_and_patches_status(crontabs, crd_ns):
    api = client.CustomObjectsApi(_api(crontabs))
    seen: list[tuple[str, str]] = []
    started = threading.Event()

    def watch_them() -> None:
        w = watch.Watch()
        started.set()
        for ev in w.stream(api.list_namespaced_custom_object, GROUP, "v1", crd_ns, "crontabs", timeout_seconds=10):
            seen.append((ev["type"], ev["object"]["metadata"]["name"]))
            if len(seen) >= 2:
                w.stop()

    t = threading.Thread(target=watch_them)
    t.start()
    started.wait()
    time.sleep(0.5)
    body = yaml.safe_load(crontab("py"))
    created = api.create_namespaced_custom_object(GROUP, "v1", crd_ns, "crontabs", body)
    assert created["spec"]["replicas"] == 1
    patched = api.patch_namespaced_custom_object_status(GROUP, "v1", crd_ns, "crontabs", "py",
                                                        {"status": {"replicas": 1}})  # fmt: skip
    assert patched["status"] == {"replicas": 1}
    assert patched["metadata"]["generation"] == 1
    t.join(15)
    assert seen[:2] == [("ADDED", "py"), ("MODIFIED", "py")]
    listed = api.list_namespaced_custom_object(GROUP, "v1", crd_ns, "crontabs")
    assert [o["metadata"]["name"] for o in listed["items"]] == ["py"]
    assert listed["kind"] == "CronTabList"
    # protobuf only: refused, as upstream does for a kind with no protobuf form
    status, _, _ = crontabs.raw_request("GET", f"/apis/{GROUP}/v1/namespaces/{crd_ns}/crontabs",
                                        headers={"Accept": "application/vnd.kubernetes.protobuf"})  # fmt: skip
    assert status == 406


def test_a_kind_another_crd_of_the_group_holds_is_not_accepted(crontabs):
    install_name = f"crontabcopies.{GROUP}"
    crontabs.kubectl("apply", "-f", "-", input=crd_manifest("crontabcopies", "CronTab", "ctc"), check=True)
    deadline = time.time() + 10
    cond: dict[str, Any] = {}
    while time.time() < deadline:
        crd = get_json(crontabs, "crd", install_name)
        cond = {c["type"]: c for c in (crd.get("status") or {}).get("conditions") or []}
        if "NamesAccepted" in cond:
            break
        time.sleep(0.2)
    assert cond["NamesAccepted"]["status"] == "False"
    # singular, kind and list kind are all taken; as upstream, the condition names the last one checked
    assert cond["NamesAccepted"]["reason"] == "ListKindConflict"
    assert cond["NamesAccepted"]["message"] == '"CronTabList" is already in use'
    assert crd["status"]["acceptedNames"]["plural"] == "crontabcopies"  # what was free was accepted
    assert cond["Established"]["status"] == "False"
    crontabs.kubectl("delete", "crd", install_name, check=True)


def test_deleting_a_crd_deletes_its_objects_first(crd_cluster, crd_ns):
    name = f"widgets.{GROUP}"
    install(crd_cluster, crd_manifest("widgets", "Widget", "wd"), name)
    for n in ("w1", "w2"):
        manifest = crontab(n).replace("kind: CronTab", "kind: Widget")
        crd_cluster.kubectl("create", "-n", crd_ns, "-f", "-", input=manifest, check=True)
    crd_cluster.kubectl("delete", "crd", name, "--timeout=30s", check=True)
    assert crd_cluster.kubectl("get", "crd", name).returncode != 0
    status, _ = crd_cluster.request("GET", f"/apis/{GROUP}/v1/namespaces/{crd_ns}/widgets")
    assert status == 404
    # a new CRD of the same name starts empty: the objects went from storage too
    install(crd_cluster, crd_manifest("widgets", "Widget", "wd"), name)
    assert "No resources found" in crd_cluster.kubectl("get", "widgets", "-n", crd_ns, check=True).stderr
    crd_cluster.kubectl("delete", "crd", name, check=True)


def test_a_cluster_scoped_crd(crd_cluster):
    manifest = crd_manifest("gadgets", "Gadget", "gd").replace("scope: Namespaced", "scope: Cluster")
    install(crd_cluster, manifest, f"gadgets.{GROUP}")
    crd_cluster.kubectl("create", "-f", "-", input=crontab("g1").replace("kind: CronTab", "kind: Gadget"),
                        check=True)  # fmt: skip
    obj = get_json(crd_cluster, "gadget", "g1")
    assert "namespace" not in obj["metadata"]
    assert obj["spec"]["replicas"] == 1
    crd_cluster.kubectl("delete", "crd", f"gadgets.{GROUP}", check=True)


def test_kubectl_explain_reads_the_crd_schema_from_openapi(crontabs):
    res = crontabs.kubectl("explain", "crontab.spec", check=True)
    assert "KIND:       CronTab" in res.stdout
    assert "GROUP:      stable.example.com" in res.stdout
    for field in ("cronSpec", "image", "replicas", "mode"):
        assert field in res.stdout
    assert "<string> -required-" in res.stdout  # cronSpec is required
    res = crontabs.kubectl("explain", "crontabs.metadata", check=True)
    assert "ObjectMeta is metadata that all persisted resources must have" in res.stdout
    status, doc = crontabs.request("GET", "/openapi/v2")
    assert status == 200
    assert "com.example.stable.v1.CronTab" in doc["definitions"]  # type: ignore[index]
    assert f"/apis/{GROUP}/v1/namespaces/{{namespace}}/crontabs/{{name}}/scale" in doc["paths"]  # type: ignore[index]


MULTI = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pipelines.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: pipelines, singular: pipeline, kind: Pipeline}
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema: &schema
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              stages: {type: integer}
    selectableFields:
    - jsonPath: .spec.color
  - name: v1
    served: true
    storage: true
    schema: *schema
    selectableFields:
    - jsonPath: .spec.color
"""


def test_several_versions_one_storage_version_and_selectable_fields(crd_cluster, crd_ns):
    install(crd_cluster, MULTI, "pipelines.stable.example.com")
    try:
        for name, version, color in (("red1", "v1beta1", "red"), ("blue1", "v1", "blue"), ("red2", "v1", "red")):
            body = {"apiVersion": f"{GROUP}/{version}", "kind": "Pipeline", "metadata": {"name": name},
                    "spec": {"color": color, "stages": 3}}  # fmt: skip
            crd_cluster.kubectl("create", "-n", crd_ns, "-f", "-", input=json.dumps(body), check=True)
        # Each version serves every object, in its own apiVersion; the preferred version is v1.
        assert get_json(crd_cluster, "pipeline", "red1", "-n", crd_ns)["apiVersion"] == f"{GROUP}/v1"
        old = get_json(crd_cluster, f"pipelines.v1beta1.{GROUP}", "blue1", "-n", crd_ns)
        assert old["apiVersion"] == f"{GROUP}/v1beta1" and old["spec"] == {"color": "blue", "stages": 3}
        status, doc = crd_cluster.request("GET", f"/apis/{GROUP}")
        assert status == 200
        assert doc["preferredVersion"]["version"] == "v1"  # type: ignore[index]
        # selectableFields: a field selector on the listed path
        res = crd_cluster.kubectl("get", "pipelines", "-n", crd_ns, "--field-selector=spec.color=red", "-o", "name",
                                  check=True)  # fmt: skip
        assert res.stdout.split() == [f"pipeline.{GROUP}/red1", f"pipeline.{GROUP}/red2"]
        res = crd_cluster.kubectl("get", "pipelines", "-n", crd_ns, "--field-selector=spec.stages=3")
        assert res.returncode != 0 and "field label not supported: spec.stages" in res.stderr
        # a new storage version joins storedVersions
        crd = get_json(crd_cluster, "crd", f"pipelines.{GROUP}")
        assert crd["status"]["storedVersions"] == ["v1"]
        crd["spec"]["versions"][0]["storage"], crd["spec"]["versions"][1]["storage"] = True, False
        crd_cluster.kubectl("replace", "-f", "-", input=json.dumps(crd), check=True)
        assert get_json(crd_cluster, "crd", f"pipelines.{GROUP}")["status"]["storedVersions"] == ["v1", "v1beta1"]
        assert get_json(crd_cluster, "pipeline", "red2", "-n", crd_ns)["spec"]["color"] == "red"
    finally:
        crd_cluster.kubectl("delete", "crd", f"pipelines.{GROUP}")


RULES = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: quotas.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: quotas, singular: quota, kind: Quota}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.min <= self.max
              message: min must not exceed max
            - rule: self.owner == oldSelf.owner
              messageExpression: "'owner is immutable, it was ' + oldSelf.owner"
              reason: FieldValueForbidden
              fieldPath: .owner
            properties:
              min: {type: integer}
              max: {type: integer}
              owner: {type: string}
"""


def quota(name: str, lo: int, hi: int, owner: str = "team-a") -> str:
    return json.dumps({"apiVersion": f"{GROUP}/v1", "kind": "Quota", "metadata": {"name": name},
                       "spec": {"min": lo, "max": hi, "owner": owner}})  # fmt: skip


def test_cel_validation_rules_with_messages_and_transition_rules(crd_cluster, crd_ns):
    install(crd_cluster, RULES, f"quotas.{GROUP}")
    try:
        res = crd_cluster.kubectl("create", "-n", crd_ns, "-f", "-", input=quota("q", 5, 1))
        assert res.returncode != 0
        assert 'The Quota "q" is invalid: spec: Invalid value: "object": min must not exceed max' in res.stderr
        crd_cluster.kubectl("create", "-n", crd_ns, "-f", "-", input=quota("q", 1, 5), check=True)
        res = crd_cluster.kubectl("replace", "-n", crd_ns, "-f", "-", input=quota("q", 1, 6, owner="team-b"))
        assert res.returncode != 0
        assert "spec.owner: Forbidden: owner is immutable, it was team-a" in res.stderr
        crd_cluster.kubectl("replace", "-n", crd_ns, "-f", "-", input=quota("q", 1, 6), check=True)
        # a rule that does not compile is refused with the CRD
        bad = RULES.replace("quotas", "badquotas").replace("Quota", "BadQuota").replace("quota}", "badquota}")
        bad = bad.replace("self.min <= self.max", "self.min <= self.maximum")
        res = crd_cluster.kubectl("apply", "-f", "-", input=bad)
        assert res.returncode != 0
        assert "compilation failed" in res.stderr and "undefined field 'maximum'" in res.stderr
    finally:
        crd_cluster.kubectl("delete", "crd", f"quotas.{GROUP}")
