"""The aggregator's settings: kube-apiserver's `--proxy-client-*`, `--requestheader-*` and
`--enable-aggregator-routing` flags (upstream: k8s.io/apiserver pkg/server/options/authentication.go
RequestHeaderAuthenticationOptions, kubernetes pkg/controlplane/apiserver/options).

kube-apiserver leaves the request-header flags empty; every cluster kubeadm sets up passes the values used as
defaults here, with the front-proxy CA and client certificate pyk8s makes in its PKI (empty file flags mean
those).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..apiserver.certs import FRONT_PROXY_CLIENT_NAME, PKI

log = logging.getLogger("pyk8s.aggregator")

USERNAME_HEADER = "X-Remote-User"
GROUP_HEADER = "X-Remote-Group"
EXTRA_HEADER_PREFIX = "X-Remote-Extra-"
UID_HEADER = "X-Remote-Uid"
# How often every APIService's availability is checked again besides on changes (upstream: the APIService
# informer's 30 s resync). PYK8S_APISERVICE_RESYNC exists for tests.
AVAILABILITY_RESYNC = 30.0


def _resync_default() -> float:
    raw = os.environ.get("PYK8S_APISERVICE_RESYNC")
    return float(raw) if raw else AVAILABILITY_RESYNC


@dataclass
class AggregatorOptions:
    proxy_client_cert_file: str = ""  # "": the PKI's front-proxy-client.crt
    proxy_client_key_file: str = ""
    requestheader_client_ca_file: str = ""  # "": the PKI's front-proxy-ca.crt
    requestheader_allowed_names: list[str] = field(default_factory=lambda: [FRONT_PROXY_CLIENT_NAME])
    requestheader_username_headers: list[str] = field(default_factory=lambda: [USERNAME_HEADER])
    requestheader_group_headers: list[str] = field(default_factory=lambda: [GROUP_HEADER])
    requestheader_extra_headers_prefix: list[str] = field(default_factory=lambda: [EXTRA_HEADER_PREFIX])
    # Route to a Service's endpoints instead of its cluster IP. pyk8s has no service proxy: a cluster IP is
    # reached only when it is a loopback address, endpoints usually are; so on by default, unlike upstream.
    enable_aggregator_routing: bool = True
    availability_resync: float = field(default_factory=_resync_default)

    def validate(self) -> list[str]:
        """Upstream's checks: values must not be blank; leaving out the standard headers only warns."""
        problems: list[str] = []
        for flag, values in (
            ("requestheader-username-headers", self.requestheader_username_headers),
            ("requestheader-group-headers", self.requestheader_group_headers),
            ("requestheader-extra-headers-prefix", self.requestheader_extra_headers_prefix),
            ("requestheader-allowed-names", self.requestheader_allowed_names),
        ):
            if any(not value.strip() for value in values):
                problems.append(f'empty value in "{flag}"')
        if (self.proxy_client_cert_file == "") != (self.proxy_client_key_file == ""):
            problems.append("--proxy-client-cert-file and --proxy-client-key-file must be given together")
        return problems

    def warn_nonstandard(self) -> None:
        for flag, values, standard in (
            ("--requestheader-username-headers", self.requestheader_username_headers, USERNAME_HEADER),
            ("--requestheader-group-headers", self.requestheader_group_headers, GROUP_HEADER),
            ("--requestheader-extra-headers-prefix", self.requestheader_extra_headers_prefix, EXTRA_HEADER_PREFIX),
        ):
            if values and standard.lower() not in (x.lower() for x in values):
                log.warning("%s is set without specifying the standard %s header - API aggregation will not work",
                            flag, standard)  # fmt: skip

    def client_certificate(self, pki: PKI) -> tuple[Path, Path]:
        """The certificate and key the proxy presents to extension API servers."""
        if self.proxy_client_cert_file:
            return Path(self.proxy_client_cert_file), Path(self.proxy_client_key_file)
        return pki.front_proxy_client_cert, pki.front_proxy_client_key

    def requestheader_ca(self, pki: PKI) -> Path:
        return Path(self.requestheader_client_ca_file) if self.requestheader_client_ca_file else pki.front_proxy_ca_cert


def parse_string_slice(text: str) -> list[str]:
    """A pflag StringSlice value: comma-separated (spaces kept, as pflag's CSV reading does), "" for none."""
    return text.split(",") if text else []
