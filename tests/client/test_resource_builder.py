"""The resource builder and the RESTMapper: decoding manifests as kubectl does, and discovery against a real
`pyk8s apiserver`."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from aiohttp import web

from pyk8s.client import discovery as discovery_module
from pyk8s.client.discovery import DiscoveryClient, NoKindMatchError, NoResourceMatchError, RESTMapper
from pyk8s.client.resource_builder import BuildError, Document, ResourceBuilder, decode_stream, expand_paths, flatten


def docs(text: str, source: str = "f.yaml") -> list[Document | BuildError]:
    return list(decode_stream(text.encode(), source))


# -- decoding (no server) ----------------------------------------------------------------------------------


def test_yaml_scalars_resolve_as_go_yaml():
    (d,) = docs(
        "a: y\nb: off\nc: 0x1f\nd: 017\ne: 1_000\nf: 1.0\ng: 12:30\nh: 2020-01-01\ni: 1e3\nj: '017'\nk: 08\n"
        "l: ~\nm: 0o17\n1: one\ntrue: t\n"
    )
    assert isinstance(d, Document)
    assert d.obj == {
        "a": True, "b": False, "c": 31, "d": 15, "e": 1000, "f": 1, "g": "12:30", "h": "2020-01-01", "i": 1000,
        "j": "017", "k": 8, "l": None, "m": 15, "1": "one", "true": "t",
    }  # fmt: skip
    assert isinstance(d.obj["f"], int)


def test_documents_are_numbered_and_empty_ones_skipped():
    text = "---\n# only a comment\n---\nkind: A\n---\n\n---\nkind: B\n...\n---\nnull\n---\nkind: C\n"
    out = docs(text)
    assert [(d.index, d.obj["kind"]) for d in out if isinstance(d, Document)] == [(2, "A"), (3, "B"), (5, "C")]


def test_a_syntax_error_ends_the_stream_and_names_the_document():
    out = docs("kind: A\n---\nkind: B\nfoo: [\nbar: 1\n---\nkind: C\n", "dir/app.yaml")
    assert isinstance(out[0], Document) and out[0].obj == {"kind": "A"}
    assert len(out) == 2 and isinstance(out[1], BuildError)
    assert str(out[1]).startswith("error parsing dir/app.yaml (document 2): yaml: line ")
    (bad_separator,) = [e for e in docs("--- !tag\nkind: A\n") if isinstance(e, BuildError)]
    assert "invalid Yaml document separator" in str(bad_separator)


def test_json_stream():
    out = docs('{"kind": "A", "n": 2.0}\n {"kind": "B"}{"kind": "C"}\n', "s.json")
    assert [d.obj for d in out] == [{"kind": "A", "n": 2}, {"kind": "B"}, {"kind": "C"}]  # type: ignore[union-attr]
    err = docs('{"kind": "A"}\n{"kind": \n', "s.json")[1]
    assert isinstance(err, BuildError) and str(err).startswith("error parsing s.json (document 2): ")


def test_utf8_bom_and_utf16():
    assert docs("\ufeffkind: A\n")[0].obj == {"kind": "A"}  # type: ignore[union-attr]
    (d,) = decode_stream("kind: Ü\n".encode("utf-16"), "u16.yaml")
    assert isinstance(d, Document) and d.obj == {"kind": "Ü"}


def test_lists_are_flattened_and_items_checked():
    doc = Document(
        "l.yaml", 3,
        {"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "ConfigMapList", "items": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
                {"kind": "ConfigMap", "metadata": {"name": "c"}},
            ]},
            "text",
        ]},
    )  # fmt: skip
    out = list(flatten(doc))
    assert [d.obj["metadata"]["name"] for d in out if isinstance(d, Document)] == ["a", "b"]
    assert [d.item for d in out] == [(1,), (2, 1), (2, 2), (3,)]
    errors = [str(e) for e in out if isinstance(e, BuildError)]
    assert errors[0].startswith("unable to decode \"l.yaml\" (document 3, item 2.2): Object 'apiVersion' is missing in")
    assert errors[1] == 'unable to decode "l.yaml" (document 3, item 3): expected an object, got a string'
    (no_kind,) = flatten(Document("x.yaml", 1, {"apiVersion": "v1", "metadata": {"name": "n"}}))
    assert str(no_kind) == (
        'unable to decode "x.yaml" (document 1): Object \'Kind\' is missing in \'{"apiVersion":"v1","metadata":{"name":"n"}}\''
    )


def test_directories_expand_like_kubectl(tmp_path: Path):
    for rel in ("b.yaml", "a.json", "README.md", "c.yml", "sub/x.yaml", "sub/deeper/y.json", "z.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    root = str(tmp_path)
    flat, errors = expand_paths([root])
    assert [s.name.removeprefix(root + "/") for s in flat] == ["a.json", "b.yaml", "c.yml"] and not errors
    deep, _ = expand_paths([root], recursive=True)
    assert [s.name.removeprefix(root + "/") for s in deep] == [
        "a.json", "b.yaml", "c.yml", "sub/deeper/y.json", "sub/x.yaml",
    ]  # fmt: skip
    explicit, _ = expand_paths([str(tmp_path / "z.txt"), "-", str(tmp_path / "*.yml")])
    assert [s.kind for s in explicit] == ["file", "stdin", "file"] and explicit[2].name.endswith("c.yml")
    _, missing = expand_paths(["/nonexistent/x.yaml"])
    assert str(missing[0]) == 'the path "/nonexistent/x.yaml" does not exist'


# -- against the API server --------------------------------------------------------------------------------


async def test_rest_mapper_from_aggregated_discovery(client):
    mapper = RESTMapper(client)
    deploy = await mapper.rest_mapping("Deployment", "apps/v1")
    assert (deploy.group, deploy.version, deploy.plural, deploy.namespaced) == ("apps", "v1", "deployments", True)
    ns = await mapper.rest_mapping("Namespace", "v1")
    assert ns.plural == "namespaces" and not ns.namespaced
    for name in ("deploy", "deployments", "deployment", "Deployment", "deployments.apps", "deployments.v1.apps"):
        assert (await mapper.resource_for(name)).plural == "deployments", name
    assert (await mapper.resource_for("svc")).kind == "Service"
    assert (await mapper.resource_for("ev")).group == ""  # the core group wins over events.k8s.io
    assert mapper.discovery.fetches == 1
    with pytest.raises(NoKindMatchError) as err:
        await mapper.rest_mapping("Foo", "example.com/v1")
    assert str(err.value) == 'no matches for kind "Foo" in version "example.com/v1"'
    assert mapper.discovery.fetches == 2  # a miss refreshes once (a CRD may just have been created) ...
    with pytest.raises(NoKindMatchError):
        await mapper.rest_mapping("Bar", "example.com/v1")
    with pytest.raises(NoResourceMatchError, match='the server doesn\'t have a resource type "nopes"'):
        await mapper.resource_for("nopes")
    assert mapper.discovery.fetches == 2  # ... and not again right after
    mapper.invalidate()
    with pytest.raises(NoKindMatchError):  # a lookup that has just fetched does not fetch again
        await mapper.rest_mapping("Foo", "example.com/v1")
    assert mapper.discovery.fetches == 3


async def test_legacy_discovery_gives_the_same_resources(client, monkeypatch):
    aggregated = await RESTMapper(client).resources()
    # A server that ignores the aggregated Accept answers the legacy documents; they are followed per version.
    monkeypatch.setattr(discovery_module, "AGGREGATED_ACCEPT", "application/json")
    legacy_client = DiscoveryClient(client)
    legacy = await RESTMapper(legacy_client).resources()
    key = [(r.group, r.version, r.kind, r.plural, r.namespaced, r.short_names) for r in aggregated]
    assert key == [(r.group, r.version, r.kind, r.plural, r.namespaced, r.short_names) for r in legacy]
    assert legacy_client.fetches == 1


async def test_builder_namespaces_and_errors(client, tmp_path: Path):
    (tmp_path / "a.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: other}\n"
        "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n"
        "---\napiVersion: example.com/v1\nkind: Foo\nmetadata: {name: f, namespace: x}\n"
    )
    path = str(tmp_path / "a.yaml")
    result = await ResourceBuilder(RESTMapper(client), namespace="team").filename_param([path]).do()
    assert [(i.name, i.namespace, i.index, i.object_name) for i in result.infos] == [
        ("one", "team", 1, "configmap/one"),
        ("two", "other", 2, "configmap/two"),
        ("r", "", 3, "clusterrole.rbac.authorization.k8s.io/r"),
    ]
    # The default namespace is written into the object, as kubectl does (the annotation names it).
    assert result.infos[0].obj["metadata"] == {"name": "one", "namespace": "team"}
    assert "namespace" not in result.infos[2].obj["metadata"]
    (unknown,) = result.errors
    assert str(unknown) == (
        f'resource mapping not found for name: "f" namespace: "x" from "{path}" (document 4): '
        'no matches for kind "Foo" in version "example.com/v1"\nensure CRDs are installed first'
    )
    enforced = (
        await ResourceBuilder(RESTMapper(client), namespace="team", enforce_namespace=True).filename_param([path]).do()
    )
    assert [i.name for i in enforced.infos] == ["one", "r"]
    assert str(enforced.errors[0]) == (
        f'error in "{path}" (document 2): the namespace from the provided object "other" does not match the '
        "namespace \"team\". You must pass '--namespace=other' to perform this operation."
    )
    # A path that does not exist fails the whole build, as in kubectl.
    nothing = await ResourceBuilder(RESTMapper(client)).filename_param([path, str(tmp_path / "nope.yaml")]).do()
    assert not nothing.infos and len(nothing.errors) == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_url_and_stdin_sources(client):
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-url}\n"
    hits = {"flaky": 0}

    async def serve(request: web.Request) -> web.Response:
        if request.path == "/flaky.yaml":
            hits["flaky"] += 1
            if hits["flaky"] == 1:
                return web.Response(status=503)
        if request.path in ("/m.yaml", "/flaky.yaml"):
            return web.Response(text=manifest)
        return web.Response(status=404, text="no")

    app = web.Application()
    app.router.add_get("/{name}", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        base = f"http://127.0.0.1:{port}"
        builder = ResourceBuilder(
            RESTMapper(client), stdin=b'{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "in"}}',
            url_retry_delay=0.01,
        ).filename_param([f"{base}/m.yaml", "-", f"{base}/flaky.yaml", f"{base}/missing.yaml"])  # fmt: skip
        result = await builder.do()
    finally:
        await runner.cleanup()
    assert [(i.source, i.name, i.resource.kind) for i in result.infos] == [
        (f"{base}/m.yaml", "from-url", "ConfigMap"),
        ("STDIN", "in", "Secret"),
        (f"{base}/flaky.yaml", "from-url", "ConfigMap"),
    ]
    assert hits["flaky"] == 2
    (err,) = result.errors
    assert str(err) == f'unable to read URL "{base}/missing.yaml", server reported 404 Not Found, status code=404'
