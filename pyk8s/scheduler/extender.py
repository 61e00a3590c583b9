"""HTTP scheduler extenders (upstream: pkg/scheduler/extender.go, the JSON protocol of k8s.io/kube-scheduler
extender/v1, and the extender parts of scheduler.go's buildExtenders and preemption.go's callExtenders).

An extender is a web service the scheduler POSTs JSON to: `<urlPrefix>/<filterVerb>` narrows the feasible
nodes, `<prioritizeVerb>` adds scores, `<bindVerb>` binds the pod instead of the framework's bind plugins and
`<preemptVerb>` vets preemption victims. The messages use the Go field names of the v1 types ("Pod", "Nodes",
"NodeNames", "FailedNodes", ...), which is what encoding/json emits for those untagged structs; replies are
read the way encoding/json reads them, matching keys exactly first and case-insensitively otherwise.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import ssl
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from .framework.interface import Pod, Status

if TYPE_CHECKING:
    from .config import Extender, SchedulerConfig
    from .framework.preemption import Candidate, Victims
    from .framework.snapshot import Snapshot
    from .framework.types import NodeInfo

log = logging.getLogger(__name__)

# Extender scores run 0..10; they are scaled to the framework's 0..100 (upstream: extenderv1.MaxExtenderPriority).
MAX_EXTENDER_PRIORITY = 10
# The pseudo plugin name a pod rejected by an extender carries, so any cluster event requeues it
# (upstream: framework.ExtenderName).
EXTENDER_NAME = "Extender"


class ExtenderError(Exception):
    """A call to an extender failed (transport, HTTP status, malformed reply, or the extender's own Error)."""


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """A member of a decoded JSON object as encoding/json finds it: the exact key, else any key equal to it
    ignoring case."""
    if name in obj:
        return obj[name]
    low = name.lower()
    for k, v in obj.items():
        if isinstance(k, str) and k.lower() == low:
            return v
    return None


def _json_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _unmarshal_error(v: Any, go_type: str) -> ExtenderError:
    return ExtenderError(f"json: cannot unmarshal {_json_kind(v)} into Go value of type {go_type}")


def _string_map(v: Any, go_type: str = "v1.FailedNodesMap") -> dict[str, str]:
    if v is None:
        return {}
    if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
        raise _unmarshal_error(v, go_type)
    return dict(v)


def _string_list(v: Any) -> list[str] | None:
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _unmarshal_error(v, "[]string")
    return list(v)


def _int64(v: Any) -> int:
    # encoding/json refuses fractions, exponents and out-of-range values for an int64.
    if isinstance(v, bool) or not isinstance(v, int) or not -(2**63) <= v < 2**63:
        raise _unmarshal_error(v, "int64")
    return v


def _b64(v: Any) -> bytes:
    """A []byte field of ExtenderTLSConfig: base64 text in the JSON document (raw bytes accepted too)."""
    if not v:
        return b""
    if isinstance(v, bytes | bytearray):
        return bytes(v)
    return base64.b64decode(v)


def _data_or_file(data: Any, file: str | None) -> bytes:
    # client-go's dataFromSliceOrFile: inline data wins over the file.
    raw = _b64(data)
    if raw:
        return raw
    if file:
        return Path(file).read_bytes()
    return b""


def make_ssl_context(enable_https: bool, tls: Mapping[str, Any] | None) -> ssl.SSLContext | None:
    """The TLS settings of the extender's client (upstream: makeTransport over client-go's TLSConfigFor).

    None means the HTTP library's defaults (system roots), as client-go returns no TLS config when nothing is
    set. With enableHTTPS and no CA the server certificate is not verified, as upstream does."""
    tls = dict(tls or {})
    ca_file, ca_data = tls.get("caFile") or "", tls.get("caData") or ""
    has_ca = bool(ca_file or ca_data)
    insecure = bool(tls.get("insecure"))
    if enable_https and not has_ca:
        insecure = True
    cert_set = bool(tls.get("certFile") or tls.get("certData"))
    key_set = bool(tls.get("keyFile") or tls.get("keyData"))
    has_cert_auth = cert_set and key_set
    if not (has_ca or has_cert_auth or insecure or tls.get("serverName")):
        return None
    if has_ca and insecure:
        raise ValueError("specifying a root certificates file with the insecure flag is not allowed")
    try:
        if insecure:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif has_ca:
            ca = _data_or_file(ca_data, ca_file)
            try:
                ctx = ssl.create_default_context(cadata=ca.decode())
            except UnicodeDecodeError:
                ctx = ssl.create_default_context(cadata=ca)  # DER
        else:
            ctx = ssl.create_default_context()
        if has_cert_auth:
            _load_client_cert(ctx, tls)
    except (OSError, ssl.SSLError, ValueError) as e:
        raise ValueError(f"extender TLS configuration: {e}") from e
    return ctx


def _load_client_cert(ctx: ssl.SSLContext, tls: Mapping[str, Any]) -> None:
    cert = _data_or_file(tls.get("certData"), tls.get("certFile"))
    key = _data_or_file(tls.get("keyData"), tls.get("keyFile"))
    # The ssl module reads a key pair only from files: inline data goes through a private temporary directory.
    with tempfile.TemporaryDirectory(prefix="pyk8s-extender-") as tmp:
        cert_path, key_path = os.path.join(tmp, "client.crt"), os.path.join(tmp, "client.key")
        Path(cert_path).write_bytes(cert)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        ctx.load_cert_chain(cert_path, key_path)


class HTTPExtender:
    """One configured extender (upstream: HTTPExtender)."""

    def __init__(self, config: Extender) -> None:
        self.url_prefix = config.url_prefix
        self.filter_verb = config.filter_verb
        self.prioritize_verb = config.prioritize_verb
        self.bind_verb = config.bind_verb
        self.preempt_verb = config.preempt_verb
        self.weight = int(config.weight)
        self.node_cache_capable = config.node_cache_capable
        self.managed_resources = {r.name for r in config.managed_resources}
        self.ignorable = config.ignorable
        self.timeout = config.effective_http_timeout
        self.ssl_context = make_ssl_context(config.enable_https, config.tls_config)
        self.server_name: str | None = (config.tls_config or {}).get("serverName") or None
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def name(self) -> str:
        return self.url_prefix

    def __repr__(self) -> str:
        return f"HTTPExtender({self.url_prefix!r})"

    def is_ignorable(self) -> bool:
        return self.ignorable

    def is_binder(self) -> bool:
        return bool(self.bind_verb)

    def is_filter(self) -> bool:
        return bool(self.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.prioritize_verb)

    def supports_preemption(self) -> bool:
        return bool(self.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        """Whether the pod asks for a resource this extender manages (in any container's or init container's
        requests or limits); an extender managing nothing is interested in every pod."""
        if not self.managed_resources:
            return True
        spec = pod.get("spec") or {}
        for key in ("containers", "initContainers"):
            for c in spec.get(key) or ():
                res = c.get("resources") or {}
                if any(r in self.managed_resources for r in res.get("requests") or ()):
                    return True
                if any(r in self.managed_resources for r in res.get("limits") or ()):
                    return True
        return False

    # -- the verbs ------------------------------------------------------------------------------------------

    def _args(self, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[str, Any]:
        """ExtenderArgs: node names for an extender with its own node cache, else the full NodeList."""
        if self.node_cache_capable:
            return {"Pod": pod, "Nodes": None, "NodeNames": [ni.name for ni in nodes]}
        # A v1.NodeList as Go serialises a fresh one: empty metadata, items (null when there are none).
        items = [ni.node for ni in nodes] or None
        return {"Pod": pod, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """(names of the nodes that pass, failed node -> reason, failed-and-unresolvable node -> reason)."""
        if not self.filter_verb:
            return [ni.name for ni in nodes], {}, {}
        result = await self._send(self.filter_verb, self._args(pod, nodes))
        if result is None:
            result = {}
        if not isinstance(result, dict):
            raise _unmarshal_error(result, "v1.ExtenderFilterResult")
        err = _field(result, "Error")
        if err is not None and not isinstance(err, str):
            raise _unmarshal_error(err, "string")
        if err:
            raise ExtenderError(err)
        failed = _string_map(_field(result, "FailedNodes"))
        unresolvable = _string_map(_field(result, "FailedAndUnresolvableNodes"))
        names = _string_list(_field(result, "NodeNames"))
        if self.node_cache_capable and names is not None:
            given = {ni.name for ni in nodes}
            for name in names:
                if name not in given:
                    raise ExtenderError(
                        f"extender {json.dumps(self.url_prefix)} claims a filtered node {json.dumps(name)} which is "
                        "not found in the input node list"
                    )
            return names, failed, unresolvable
        node_list = _field(result, "Nodes")
        if node_list is None:
            return [], failed, unresolvable  # neither list: no node passes (as upstream)
        if not isinstance(node_list, dict):
            raise _unmarshal_error(node_list, "v1.NodeList")
        items = _field(node_list, "items") or []
        if not isinstance(items, list) or not all(isinstance(n, dict) for n in items):
            raise _unmarshal_error(items, "[]v1.Node")
        return [str((n.get("metadata") or {}).get("name") or "") for n in items], failed, unresolvable

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[str, int]:
        """Node name -> the extender's score (0..10 by convention; the caller applies weight and scaling).
        A host listed twice counts twice, as upstream sums every entry."""
        if not self.prioritize_verb:
            return {ni.name: 0 for ni in nodes}
        result = await self._send(self.prioritize_verb, self._args(pod, nodes))
        if result is None:
            return {}
        if not isinstance(result, list):
            raise _unmarshal_error(result, "v1.HostPriorityList")
        out: dict[str, int] = {}
        for hp in result:
            if hp is None:
                hp = {}
            if not isinstance(hp, dict):
                raise _unmarshal_error(hp, "v1.HostPriority")
            host = _field(hp, "Host")
            if host is not None and not isinstance(host, str):
                raise _unmarshal_error(host, "string")
            score = _field(hp, "Score")
            score = 0 if score is None else _int64(score)
            out[host or ""] = out.get(host or "", 0) + score
        return out

    async def bind(self, binding: Mapping[str, Any]) -> None:
        """Ask the extender to bind: `binding` is a v1.Binding (metadata of the pod, target the node)."""
        if not self.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        md = binding.get("metadata") or {}
        args = {
            "PodName": md.get("name", ""),
            "PodNamespace": md.get("namespace", ""),
            "PodUID": md.get("uid", ""),
            "Node": (binding.get("target") or {}).get("name", ""),
        }
        result = await self._send(self.bind_verb, args)
        if result is None:
            return
        if not isinstance(result, dict):
            raise _unmarshal_error(result, "v1.ExtenderBindingResult")
        err = _field(result, "Error")
        if err is not None and not isinstance(err, str):
            raise _unmarshal_error(err, "string")
        if err:
            raise ExtenderError(err)

    async def process_preemption(
        self, pod: Pod, victims: Mapping[str, Victims], snapshot: Snapshot
    ) -> dict[str, Victims]:
        """The extender's verdict on the preemption candidates (upstream: ProcessPreemption): node name ->
        victims it accepts. The reply names pods by UID; they are looked up on the snapshot's nodes."""
        from .framework.preemption import Victims

        if not self.supports_preemption():
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.url_prefix} but run into ProcessPreemption"
            )
        if self.node_cache_capable:
            meta = {
                name: {
                    "Pods": [{"UID": (p.get("metadata") or {}).get("uid", "")} for p in v.pods],
                    "NumPDBViolations": v.num_pdb_violations,
                }
                for name, v in victims.items()
            }
            args: dict[str, Any] = {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
        else:
            full = {
                name: {"Pods": list(v.pods), "NumPDBViolations": v.num_pdb_violations} for name, v in victims.items()
            }
            args = {"Pod": pod, "NodeNameToVictims": full, "NodeNameToMetaVictims": None}
        result = await self._send(self.preempt_verb, args)
        if result is None:
            result = {}
        if not isinstance(result, dict):
            raise _unmarshal_error(result, "v1.ExtenderPreemptionResult")
        meta_result = _field(result, "NodeNameToMetaVictims") or {}
        if not isinstance(meta_result, dict):
            raise _unmarshal_error(meta_result, "map[string]*v1.MetaVictims")
        out: dict[str, Victims] = {}
        for node_name, mv in meta_result.items():
            ni = snapshot.get(node_name)
            if ni is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node_name}"')
            mv = mv or {}
            if not isinstance(mv, dict):
                raise _unmarshal_error(mv, "v1.MetaVictims")
            npdb = _field(mv, "NumPDBViolations")
            pods: list[Pod] = []
            by_uid = {pi.uid: pi.pod for pi in ni.pods}
            for mp in _field(mv, "Pods") or []:
                uid = str(_field(mp or {}, "UID") or "")
                found = by_uid.get(uid)
                if found is None:
                    raise ExtenderError(
                        f"extender: {self.url_prefix} claims to preempt pod (UID: &{{{uid}}}) on node: {node_name}, "
                        "but the pod is not found on that node"
                    )
                pods.append(found)
            out[node_name] = Victims(pods, 0 if npdb is None else _int64(npdb))
        return out

    # -- transport -------------------------------------------------------------------------------------------

    def _client(self) -> aiohttp.ClientSession:
        # One keep-alive session per event loop (a session cannot outlive or cross its loop).
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            connector = aiohttp.TCPConnector(ssl=self.ssl_context if self.ssl_context is not None else True)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout)
            )
            self._loop = loop
        return self._session

    async def close(self) -> None:
        if self._session is not None and not self._session.closed and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = None

    async def _send(self, verb: str, args: Any) -> Any:
        url = self.url_prefix.rstrip("/") + "/" + verb
        body = json.dumps(args, separators=(",", ":")).encode()
        try:
            async with self._client().post(
                url, data=body, headers={"Content-Type": "application/json"}, server_hostname=self.server_name
            ) as resp:
                if resp.status != 200:
                    raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status}")
                raw = await resp.read()
        except TimeoutError:
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
            ) from None
        except aiohttp.ClientError as e:
            raise ExtenderError(f'Post "{url}": {e}') from e
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ExtenderError(f"decoding the {verb} reply of extender at URL {url}: {e}") from e


# -- building and the parts of other upstream files that only concern extenders --------------------------------


def build_extenders(configs: Sequence[Extender], queue: Any = None) -> list[HTTPExtender]:
    """The configured extenders, non-ignorable ones first so a failing one stops a cycle early (upstream:
    buildExtenders). With a scheduling queue, pods an extender rejected are registered to be requeued by any
    cluster event, extenders having no queueing hints (upstream registers the same for ExtenderName)."""
    built = [HTTPExtender(c) for c in configs]
    ordered = [e for e in built if not e.is_ignorable()] + [e for e in built if e.is_ignorable()]
    if ordered and queue is not None:
        from .framework.interface import WILDCARD, ActionType, ClusterEvent

        every = ClusterEvent(WILDCARD, ActionType.ALL)
        for entries in queue.queueing_hint_map.values():
            entries.append((every, EXTENDER_NAME, None))
    return ordered


def apply_ignored_resources(config: SchedulerConfig) -> None:
    """Extended resources an extender marks ignoredByScheduler become NodeResourcesFit's ignoredResources in
    every profile (upstream: the second half of buildExtenders); run before the frameworks are built."""
    ignored = [r.name for x in config.extenders for r in x.managed_resources if r.ignored_by_scheduler]
    if not ignored:
        return
    for profile in config.profiles:
        pc = next((p for p in profile.plugin_config if p.name == "NodeResourcesFit"), None)
        if pc is None:
            raise ValueError("can't find NodeResourcesFitArgs in plugin config")
        pc.args = {**(pc.args or {}), "ignoredResources": ignored}


async def call_extenders_for_preemption(
    extenders: Sequence[HTTPExtender], pod: Pod, candidates: list[Candidate], snapshot: Snapshot
) -> tuple[list[Candidate], Status | None]:
    """Let the extenders that handle preemption narrow the candidates and their victims (upstream:
    Evaluator.callExtenders); the preemption evaluator calls it between the dry run and choosing a node."""
    from .framework.preemption import Candidate

    if not extenders or not candidates:
        return candidates, None
    victims = {c.name: c.victims for c in candidates}
    for ext in extenders:
        if not ext.supports_preemption() or not ext.is_interested(pod):
            continue
        try:
            got = await ext.process_preemption(pod, victims, snapshot)
        except ExtenderError as e:
            if ext.is_ignorable():
                log.info("skipping extender %s as it returned error and has ignorable flag set: %s", ext.name, e)
                continue
            return [], Status.as_error(e)
        for node_name, v in list(got.items()):
            if v is None or not v.pods:
                if ext.is_ignorable():
                    del got[node_name]
                    log.info("ignoring node %s without victims from ignorable extender %s", node_name, ext.name)
                    continue
                return [], Status.as_error(f'expected at least one victim pod on node "{node_name}"')
        victims = got
        if not victims:
            break
    return [Candidate(name, v) for name, v in victims.items()], None


async def extenders_binding(extenders: Sequence[HTTPExtender], pod: Pod, node: str) -> tuple[bool, Status | None]:
    """The first interested binder extender binds the pod (upstream: extendersBinding): (bound by an
    extender, its error status). An ignorable extender's error passes the pod on to the next binder."""
    md = pod.get("metadata") or {}
    for ext in extenders:
        if not ext.is_binder() or not ext.is_interested(pod):
            continue
        binding = {
            "metadata": {"namespace": md.get("namespace", ""), "name": md.get("name", ""), "uid": md.get("uid", "")},
            "target": {"kind": "Node", "name": node},
        }
        try:
            await ext.bind(binding)
        except ExtenderError as e:
            if ext.is_ignorable():
                log.info(
                    "skipping extender %s in bind as it returned error and has ignorable flag set: %s", ext.name, e
                )
                continue
            return True, Status.as_error(e)
        return True, None
    return False, None
