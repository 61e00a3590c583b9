"""`pyk8s apply -f` and `pyk8s delete -f` against a real `pyk8s apiserver`, side by side with the real kubectl,
plus the three-way patch and annotation functions on their own."""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from pyk8s.api.schema import kind_node
from pyk8s.cli import main
from pyk8s.client.apply import apply_all, compute_patch
from pyk8s.client.discovery import RESTMapper
from pyk8s.client.last_applied import (
    LAST_APPLIED,
    ApplyError,
    get_modified_configuration,
    get_original_configuration,
    go_json,
)
from pyk8s.client.resource_builder import ResourceBuilder
from pyk8s.client.three_way_patch import three_way_merge_patch, three_way_strategic_patch


def pyk8s(apiserver, *args: str, input: str | None = None) -> Result:
    runner = CliRunner()
    return runner.invoke(main, [*args, "--kubeconfig", str(apiserver.kubeconfig)], input=input, catch_exceptions=False)


def get(apiserver, path: str) -> tuple[int, Any]:
    return apiserver.request("GET", path)


def write(path: Path, docs: list[dict[str, Any]] | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(docs if isinstance(docs, str) else yaml.safe_dump_all(docs, sort_keys=False))


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def deployment(name: str, replicas: int = 1, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels if labels is not None else {"app": name, "tier": "front"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx:1.25",
                            "ports": [{"containerPort": 80}],
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        }
                    ]
                },
            },
        },
    }


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def tree(root: Path, ns: str) -> list[str]:
    """A manifest tree: nested directories, multi-document YAML, JSON, a List, files to ignore. Returns the
    API paths of its objects in the order kubectl visits them."""
    write(root / "README.md", "# not a manifest\nkind: nonsense\n")
    write(root / "notes.txt", "ignored too")
    (root / "app.yaml").write_text(
        "---\n"
        + yaml.safe_dump(configmap("cm-a", k="v"))
        + "---\n# nothing here\n---\n"
        + yaml.safe_dump(deployment("web"))
    )
    write(root / "nested" / "deeper" / "more.yml", [configmap("cm-c", x="1"), {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": f"{ns}-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
    }])  # fmt: skip
    write(root / "nested" / "list.yaml", [{"apiVersion": "v1", "kind": "List", "items": [
        configmap("cm-b", y="2"),
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}, "data": {"p": "dw=="}},
    ]}])  # fmt: skip
    (root / "svc.json").write_text(json.dumps(service("web"), indent=1))
    return [
        f"/api/v1/namespaces/{ns}/configmaps/cm-a",
        f"/apis/apps/v1/namespaces/{ns}/deployments/web",
        f"/api/v1/namespaces/{ns}/configmaps/cm-c",
        f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{ns}-reader",
        f"/api/v1/namespaces/{ns}/configmaps/cm-b",
        f"/api/v1/namespaces/{ns}/secrets/s1",
        f"/api/v1/namespaces/{ns}/services/web",
    ]


TREE_NAMES = ["configmap/cm-a", "deployment.apps/web", "configmap/cm-c", "clusterrole.rbac.authorization.k8s.io/{ns}-reader",
              "configmap/cm-b", "secret/s1", "service/web"]  # fmt: skip


def configmap_names(apiserver, ns: str) -> list[str]:
    items = get(apiserver, f"/api/v1/namespaces/{ns}/configmaps")[1]["items"]
    return sorted(i["metadata"]["name"] for i in items if i["metadata"]["name"] != "kube-root-ca.crt")


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


# -- (a) a tree applied twice, then changed --------------------------------------------------------------


def test_apply_tree_created_unchanged_configured(apiserver, ns, tmp_path):
    paths = tree(tmp_path / "t", ns)
    names = [n.format(ns=ns) for n in TREE_NAMES]
    first = pyk8s(apiserver, "apply", "-f", str(tmp_path / "t"), "-R", "-n", ns)
    assert first.exit_code == 0, first.output
    assert lines(first.stdout) == [f"{n} created" for n in names]
    live = [get(apiserver, p)[1] for p in paths]
    assert all(obj["metadata"]["annotations"][LAST_APPLIED].endswith("}\n") for obj in live)

    second = pyk8s(apiserver, "apply", "-f", str(tmp_path / "t"), "-R", "-n", ns)
    assert second.exit_code == 0 and lines(second.stdout) == [f"{n} unchanged" for n in names]
    assert [get(apiserver, p)[1] for p in paths] == live  # not even a resourceVersion moved

    # Another client adds a label; the manifest drops the `tier` label and an env var and changes replicas.
    apiserver.kubectl("label", "deployment", "web", "owner=ops", "-n", ns, check=True)
    changed = deployment("web", replicas=3, labels={"app": "web"})
    changed["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    app = (tmp_path / "t" / "app.yaml").read_text()
    (tmp_path / "t" / "app.yaml").write_text(app[: app.index("apiVersion: apps/v1")] + yaml.safe_dump(changed))
    third = pyk8s(apiserver, "apply", "-f", str(tmp_path / "t"), "-R", "-n", ns)
    assert third.exit_code == 0
    assert lines(third.stdout) == [f"{n} {'configured' if n == 'deployment.apps/web' else 'unchanged'}" for n in names]
    web = get(apiserver, paths[1])[1]
    assert web["spec"]["replicas"] == 3
    assert web["metadata"]["labels"] == {"app": "web", "owner": "ops"}  # removed: tier; kept: owner
    assert web["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    # Only that object was written.
    assert [get(apiserver, p)[1] for i, p in enumerate(paths) if i != 1] == [o for i, o in enumerate(live) if i != 1]

    # (e) kubectl agrees nothing is left to do: our annotation and patches are its own.
    kubectl = apiserver.kubectl("apply", "-f", str(tmp_path / "t"), "-R", "-n", ns, check=True)
    assert lines(kubectl.stdout) == [f"{n} unchanged" for n in names]

    # (d) delete the tree, then again: ignored with --ignore-not-found, an error without.
    gone = pyk8s(apiserver, "delete", "-f", str(tmp_path / "t"), "-R", "-n", ns)
    assert gone.exit_code == 0
    assert lines(gone.stdout) == [re.sub(r"^(.*)/(.*)$", r'\1 "\2" deleted', n) for n in names]
    assert all(get(apiserver, p)[0] == 404 for p in paths)
    again = pyk8s(apiserver, "delete", "-f", str(tmp_path / "t"), "-R", "-n", ns, "--ignore-not-found")
    assert again.exit_code == 0 and again.stdout == ""
    missing = pyk8s(apiserver, "delete", "-f", str(tmp_path / "t" / "svc.json"), "-n", ns)
    assert missing.exit_code == 1
    assert lines(missing.stderr) == [
        f'Error from server (NotFound): error when deleting "{tmp_path}/t/svc.json" (document 1): services "web" not found'
    ]


# -- (b) bad documents -------------------------------------------------------------------------------------


def test_bad_documents_are_reported_and_the_rest_applied_like_kubectl(apiserver, ns, tmp_path):
    bad = tmp_path / "bad"
    write(bad / "a.yaml", yaml.safe_dump(configmap("ok-1")) + "---\nkind: ConfigMap\nmetadata: [\n---\n"
          + yaml.safe_dump(configmap("after-syntax-error")))  # fmt: skip
    write(
        bad / "b.yaml",
        [configmap("ok-2"), {"apiVersion": "v1", "metadata": {"name": "no-kind"}}, configmap("after-no-kind")],
    )
    write(
        bad / "c.yaml",
        [{"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "foo"}}, configmap("ok-3")],
    )
    out = pyk8s(apiserver, "apply", "-f", str(bad), "-n", ns)
    assert out.exit_code == 1
    assert lines(out.stdout) == ["configmap/ok-1 created", "configmap/ok-2 created", "configmap/ok-3 created"]
    assert out.stderr.startswith(
        f"error: error parsing {bad}/a.yaml (document 2): yaml: line 8: did not find expected node content"
    )
    assert lines(out.stderr)[1:] == [
        f'error: error validating "{bad}/b.yaml" (document 2): error validating data: kind not set; '
        "if you choose to ignore these errors, turn validation off with --validate=false",
        f'error: resource mapping not found for name: "foo" namespace: "" from "{bad}/c.yaml" (document 1): '
        'no matches for kind "Foo" in version "example.com/v1"',
        "ensure CRDs are installed first",
    ]
    # kubectl does the same with the same files, with its schema check on (the default) and off. (Not with
    # c.yaml: for an unknown kind kubectl's check wants the CRD list and protobuf OpenAPI v2, which pyk8s lacks.)
    files = ["-f", str(bad / "a.yaml"), "-f", str(bad / "b.yaml")]
    for validate, expected in (("strict", ["ok-1", "ok-2"]), ("false", ["after-no-kind", "ok-1", "ok-2"])):
        ours, theirs = f"{ns}-{validate}", f"{ns}-k{validate}"
        apiserver.create_namespace(ours)
        apiserver.create_namespace(theirs)
        assert pyk8s(apiserver, "apply", *files, "-n", ours, f"--validate={validate}").exit_code == 1
        assert apiserver.kubectl("apply", *files, "-n", theirs, f"--validate={validate}").returncode == 1
        assert configmap_names(apiserver, ours) == configmap_names(apiserver, theirs) == expected, validate
    off = pyk8s(apiserver, "apply", "-f", str(bad / "b.yaml"), "-n", ns, "--validate=false")
    assert f"error: unable to decode \"{bad}/b.yaml\" (document 2): Object 'Kind' is missing in" in off.stderr
    nothing = pyk8s(apiserver, "apply", "-f", str(tmp_path / "nope.yaml"))
    assert nothing.exit_code == 1 and nothing.stderr == f'error: the path "{tmp_path}/nope.yaml" does not exist\n'


# -- (c) the server rejects an object ----------------------------------------------------------------------


def test_server_rejection_leaves_the_object_as_it_was(apiserver, ns, tmp_path):
    f = tmp_path / "d.yaml"
    bad_new = deployment("new")
    bad_new["spec"]["template"]["spec"]["containers"][0]["name"] = "Bad_Name"
    write(f, [bad_new])
    out = pyk8s(apiserver, "apply", "-f", str(f), "-n", ns)
    assert out.exit_code == 1 and out.stdout == ""
    assert out.stderr.startswith(
        f'Error from server (Invalid): error when creating "{f}" (document 1): Deployment.apps "new" is invalid: '
        'spec.template.spec.containers[0].name: Invalid value: "Bad_Name"'
    )
    assert get(apiserver, f"/apis/apps/v1/namespaces/{ns}/deployments/new")[0] == 404

    write(f, [deployment("web")])
    assert pyk8s(apiserver, "apply", "-f", str(f), "-n", ns).exit_code == 0
    before = get(apiserver, f"/apis/apps/v1/namespaces/{ns}/deployments/web")[1]
    broken = deployment("web", replicas=-1, labels={"app": "web", "new": "label"})
    write(f, [broken, configmap("still-applied")])
    out = pyk8s(apiserver, "apply", "-f", str(f), "-n", ns)
    assert out.exit_code == 1
    assert out.stdout == "configmap/still-applied created\n"
    assert out.stderr == (
        f'Error from server (Invalid): error when patching "{f}" (document 1): Deployment.apps "web" is invalid: '
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0\n"
    )
    assert get(apiserver, f"/apis/apps/v1/namespaces/{ns}/deployments/web")[1] == before


# -- (e) interop with kubectl, (f) stdin and URLs, dry runs ------------------------------------------------


def test_kubectl_applied_objects_are_unchanged_for_pyk8s(apiserver, ns, tmp_path):
    f = tmp_path / "k.yaml"
    write(f, [configmap("cm", a="<&>", n="1"), deployment("web"), service("web")])
    apiserver.kubectl("apply", "-f", str(f), "-n", ns, check=True)
    same = pyk8s(apiserver, "apply", "-f", str(f), "-n", ns)
    assert lines(same.stdout) == ["configmap/cm unchanged", "deployment.apps/web unchanged", "service/web unchanged"]
    write(f, [configmap("cm", a="<&>", n="2"), deployment("web"), service("web")])
    changed = pyk8s(apiserver, "apply", "-f", str(f), "-n", ns)
    assert lines(changed.stdout)[0] == "configmap/cm configured"
    kubectl = apiserver.kubectl("apply", "-f", str(f), "-n", ns, check=True)
    assert lines(kubectl.stdout) == ["configmap/cm unchanged", "deployment.apps/web unchanged", "service/web unchanged"]


async def test_patch_is_exactly_what_kubectl_sends(apiserver, client, ns, tmp_path):
    f = tmp_path / "p.yaml"
    base = deployment("web")
    base["metadata"]["finalizers"] = ["example.com/a", "example.com/b"]
    base["spec"]["template"]["spec"]["volumes"] = [
        {"name": "v1", "emptyDir": {}},
        {"name": "v2", "configMap": {"name": "x"}},
    ]
    base["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox", "args": ["a", "b"]})
    write(f, [base])
    apiserver.kubectl("apply", "-f", str(f), "-n", ns, check=True)
    apiserver.kubectl("scale", "deployment", "web", "--replicas=4", "-n", ns, check=True)
    changed = json.loads(json.dumps(base))
    spec = changed["spec"]["template"]["spec"]
    spec["containers"].reverse()
    spec["containers"][0]["args"] = ["b", "z"]
    spec["containers"][1]["env"] = [{"name": "B", "value": "3"}]
    spec["volumes"] = [{"name": "v2", "configMap": {"name": "y2"}}]
    changed["metadata"]["finalizers"] = ["example.com/b", "example.com/c"]
    changed["spec"]["strategy"] = {"type": "Recreate"}
    write(f, [changed])
    # kubectl's PATCH body, from its request log (a server dry run leaves the object as it is).
    verbose = apiserver.kubectl("apply", "-f", str(f), "-n", ns, "--dry-run=server", "-v=9", check=True).stderr
    (body,) = [m.group(1) for m in re.finditer(r'helper\.go:\d+\] "Request Body" body="(.+)"\n', verbose)]
    kubectl_body = json.loads(f'"{body}"')
    theirs = json.loads(kubectl_body)

    result = (
        await ResourceBuilder(RESTMapper(client), namespace=ns, enforce_namespace=True).filename_param([str(f)]).do()
    )
    (info,) = result.infos
    live = await client.get(info.resource, "web", ns)
    modified = json.loads(get_modified_configuration(info.obj, annotate=True))
    ours, patch_type = compute_patch(info, get_original_configuration(live), modified, live)
    assert patch_type == "strategic" and ours == theirs
    assert go_json(ours) == kubectl_body  # byte for byte: Go marshals with sorted keys, as go_json does

    (outcome,) = await apply_all(client, result.infos)
    assert outcome.operation == "configured" and outcome.error is None
    live = await client.get(info.resource, "web", ns)
    assert live["spec"]["replicas"] == 1 and live["metadata"]["finalizers"] == ["example.com/b", "example.com/c"]
    assert [c["name"] for c in live["spec"]["template"]["spec"]["containers"]] == ["side", "web"]
    assert [v["name"] for v in live["spec"]["template"]["spec"]["volumes"]] == ["v2"]


def test_stdin_url_and_dry_runs(apiserver, ns, tmp_path):
    manifest = yaml.safe_dump(configmap("from-stdin", a="1"))
    dry = pyk8s(apiserver, "apply", "-f", "-", "-n", ns, "--dry-run=server", input=manifest)
    assert dry.exit_code == 0 and dry.stdout == "configmap/from-stdin created (server dry run)\n"
    assert get(apiserver, f"/api/v1/namespaces/{ns}/configmaps/from-stdin")[0] == 404
    assert pyk8s(apiserver, "apply", "-f", "-", "-n", ns, input=manifest).stdout == "configmap/from-stdin created\n"
    changed = manifest.replace("a: '1'", "a: '2'")
    client_dry = pyk8s(apiserver, "apply", "-f", "-", "-n", ns, "--dry-run=client", input=changed)
    assert client_dry.stdout == "configmap/from-stdin configured (dry run)\n"
    assert pyk8s(apiserver, "apply", "-f", "-", "-n", ns, "--dry-run=client", input=manifest).stdout == (
        "configmap/from-stdin unchanged (dry run)\n"
    )
    assert get(apiserver, f"/api/v1/namespaces/{ns}/configmaps/from-stdin")[1]["data"] == {"a": "1"}

    (tmp_path / "web").mkdir()
    write(tmp_path / "web" / "m.yaml", [configmap("from-url"), service("from-url")])
    handler = functools.partial(_QuietHandler, directory=str(tmp_path / "web"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/m.yaml"
        out = pyk8s(apiserver, "apply", "-f", url, "-n", ns)
        assert out.exit_code == 0 and lines(out.stdout) == ["configmap/from-url created", "service/from-url created"]
        gone = pyk8s(apiserver, "delete", "-f", url, "-n", ns, "--cascade=foreground")
        assert lines(gone.stdout) == ['configmap "from-url" deleted', 'service "from-url" deleted']
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


# -- the pieces on their own -------------------------------------------------------------------------------


def test_annotation_is_kubectls_encoding():
    obj = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x", "namespace": "d"},
           "data": {"html": "<a href='x'>&</a>", "u": "é\u2028"}, "n": 1.5, "big": 1.5e16, "tiny": 1e-7}  # fmt: skip
    text = get_modified_configuration(obj, annotate=False)
    assert text == (
        '{"apiVersion":"v1","big":15000000000000000,"data":{"html":"\\u003ca href=\'x\'\\u003e\\u0026\\u003c/a\\u003e",'
        '"u":"é\\u2028"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"x","namespace":"d"},"n":1.5,'
        '"tiny":1e-7}\n'
    )
    annotated = json.loads(get_modified_configuration({**obj, "metadata": {**obj["metadata"], "annotations": {
        LAST_APPLIED: "old", "keep": "me"}}}, annotate=True))  # fmt: skip
    assert annotated["metadata"]["annotations"] == {
        "keep": "me",
        LAST_APPLIED: text.replace('"annotations":{}', '"annotations":{"keep":"me"}'),
    }
    assert go_json([True, None, 0.1, -2]) == "[true,null,0.1,-2]"


def test_three_way_strategic_keeps_what_others_set():
    node = kind_node("", "v1", "Pod")
    original = {"metadata": {"labels": {"a": "1", "gone": "x"}}, "spec": {"containers": [{"name": "c", "image": "i1"}]}}
    modified = {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c", "image": "i2"}]}}
    current = {"metadata": {"labels": {"a": "1", "gone": "x", "theirs": "y"}},
               "spec": {"containers": [{"name": "c", "image": "i1", "imagePullPolicy": "Always"}]}}  # fmt: skip
    assert three_way_strategic_patch(original, modified, current, node) == {
        "metadata": {"labels": {"gone": None}},
        "spec": {"$setElementOrder/containers": [{"name": "c"}], "containers": [{"image": "i2", "name": "c"}]},
    }
    assert three_way_strategic_patch(modified, modified, {**current, **modified}, node) == {}


def test_three_way_merge_patch_for_kinds_without_schema():
    original = {
        "apiVersion": "x/v1",
        "kind": "K",
        "metadata": {"name": "n"},
        "spec": {"a": 1, "b": [1, 2], "old": True},
    }
    modified = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"a": 2, "b": [1, 2], "e": {}}}
    current = {**original, "status": {"s": 1}, "spec": {**original["spec"], "theirs": 1}}
    assert three_way_merge_patch(original, modified, current) == {"spec": {"a": 2, "old": None, "e": {}}}
    assert three_way_merge_patch(modified, modified, {**modified, "status": {}}) == {}
    with pytest.raises(ApplyError, match="At least one of apiVersion, kind and name was changed"):
        three_way_merge_patch(original, {**modified, "kind": "L"}, current)
