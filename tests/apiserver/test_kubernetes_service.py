"""The `kubernetes` Service the API server keeps in `default`, as every cluster has it: the first service IP,
port 443 named https, and an Endpoints and an EndpointSlice that point at this API server's secure port, also
after a restart."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from pyk8s.testing.cluster import APIServerProcess


def test_the_kubernetes_service_points_at_the_api_server():
    with APIServerProcess() as server:
        for _ in range(2):  # and again after a restart
            port = urlsplit(server.url).port
            out = server.kubectl("get", "svc", "kubernetes", "-n", "default", "--no-headers", check=True).stdout.split()
            assert out[:3] == ["kubernetes", "ClusterIP", "10.96.0.1"] and out[4] == "443/TCP"
            svc = json.loads(server.kubectl("get", "svc", "kubernetes", "-o", "json", check=True).stdout)
            assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
            assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]
            ep = json.loads(server.kubectl("get", "endpoints", "kubernetes", "-o", "json", check=True).stdout)
            assert ep["subsets"] == [{"addresses": [{"ip": "127.0.0.1"}],
                                      "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]  # fmt: skip
            eps = json.loads(server.kubectl("get", "endpointslice", "kubernetes", "-o", "json", check=True).stdout)
            assert eps["endpoints"][0]["addresses"] == ["127.0.0.1"] and eps["ports"][0]["port"] == port
            server.restart()
