"""`--admission-control-config-file`: the AdmissionConfiguration (apiserver.config.k8s.io/v1 or v1alpha1) that
gives plugins their configuration, inline (`plugins[].configuration`) or in a file of its own (`plugins[].path`,
relative to the configuration file's directory) (upstream: apiserver/pkg/admission/config.go
ReadAdmissionConfiguration and ConfigFor, with the plugins' own loaders).

The file is decoded strictly, as upstream's is: an unknown field is an error. A plugin's configuration is read
only when the plugin is enabled, and each plugin reads its own kind:
- PodSecurity: a PodSecurityConfiguration (podsecurity/config.py);
- ResourceQuota: a ResourceQuotaConfiguration (resource_quota/config.py);
- ValidatingAdmissionWebhook, MutatingAdmissionWebhook: a WebhookAdmissionConfiguration whose kubeConfigFile
  (an absolute path) holds the credentials the API server presents to webhooks; the file is read and kept
  (`WebhookAdmission.users`).
Configuration for a plugin pyk8s does not implement is accepted and not read. Every error is a `ValueError` with
upstream's wording, so that the API server refuses to start and says why.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ...api import errors

if TYPE_CHECKING:
    from .podsecurity import PodSecurityConfiguration
    from .resource_quota.config import ResourceQuotaConfiguration

GROUP = "apiserver.config.k8s.io"
ADMISSION_VERSIONS = ("v1", "v1alpha1")
WEBHOOK_PLUGINS = ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")
# The kinds a WebhookAdmission configuration is written as, by version.
_WEBHOOK_KINDS = {f"{GROUP}/v1": "WebhookAdmissionConfiguration", f"{GROUP}/v1alpha1": "WebhookAdmission"}


class ConfigError(ValueError):
    """An admission configuration that cannot be read; its text is what the API server says at startup."""


class InitializationError(ValueError):
    """A plugin's configuration, read, that the plugin refuses (upstream: its ValidateInitialization)."""


@dataclass(frozen=True)
class PluginConfiguration:
    """One `plugins[]` entry: the plugin's name and its document (inline, or read from `path`)."""

    name: str
    path: str = ""
    configuration: dict[str, Any] | None = None

    def document(self) -> dict[str, Any] | None:
        """The plugin's configuration document; None when the entry has neither (upstream: a nil reader)."""
        if self.configuration is not None:
            return self.configuration
        if not self.path:
            return None
        try:
            text = Path(self.path).read_text()
        except OSError as err:
            raise ConfigError(
                f"couldn't open admission plugin configuration {self.path}: {os_error(err, 'open', self.path)}"
            ) from None
        return decode_document(text, self.path)


@dataclass(frozen=True)
class WebhookAdmission:
    """A webhook plugin's configuration: the kubeconfig file of the credentials to present to webhooks, and its
    users by name (a webhook's service `name.namespace.svc` or host, `*.namespace.svc`, or `*`)."""

    kubeconfig_file: str = ""
    users: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class AdmissionConfiguration:
    """What the file says, plugin by plugin."""

    plugins: tuple[PluginConfiguration, ...] = ()

    def config_for(self, plugin: str) -> dict[str, Any] | None:
        for p in self.plugins:
            if p.name == plugin:
                return p.document()
        return None


@dataclass(frozen=True)
class PluginConfigs:
    """The configurations the enabled plugins read (None: the plugin's defaults)."""

    pod_security: PodSecurityConfiguration | None = None
    resource_quota: ResourceQuotaConfiguration | None = None
    webhooks: dict[str, WebhookAdmission] = field(default_factory=dict)


def os_error(err: OSError, op: str, path: str) -> str:
    """An OS error as Go's os package words it: `open /a/b: no such file or directory`."""
    return f"{op} {path}: {(err.strerror or str(err)).lower()}"


def decode_document(text: str, where: str) -> dict[str, Any]:
    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as err:
        raise ConfigError(f"error converting YAML to JSON: {err}".replace("\n", " ")) from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected an object, got {type(doc).__name__}")
    return doc


def _type_meta(doc: dict[str, Any], text: str) -> tuple[str, str]:
    """apiVersion and kind, with upstream's messages when one is missing."""
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    shown = text.strip() if text else json.dumps(doc, separators=(",", ":"))
    if not kind:
        raise ConfigError(f"Object 'Kind' is missing in '{shown}'")
    if not api_version:
        raise ConfigError(f"Object 'apiVersion' is missing in '{shown}'")
    return str(api_version), str(kind)


def check_kind(doc: dict[str, Any], kinds: dict[str, str], text: str = "") -> str:
    """The document's apiVersion, when it is one of `kinds` (apiVersion -> kind) with its kind; upstream's
    scheme errors otherwise."""
    api_version, kind = _type_meta(doc, text)
    if kinds.get(api_version) != kind:
        raise ConfigError(f'no kind "{kind}" is registered for version "{api_version}"')
    return api_version


def read_admission_configuration(path: str) -> AdmissionConfiguration:
    """The AdmissionConfiguration at `path` ("" : none), decoded strictly."""
    if not path:
        return AdmissionConfiguration()
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigError(
            f"unable to read admission control configuration from {errors.go_quote(path)} [{os_error(err, 'open', path)}]"
        ) from None
    doc = decode_document(text, path)
    if not doc.get("kind") or not doc.get("apiVersion"):
        if "imagePolicy" in doc or "podNodeSelectorPluginConfig" in doc:
            return AdmissionConfiguration()  # a legacy plugin file: for plugins pyk8s does not implement
    check_kind(doc, {f"{GROUP}/{v}": "AdmissionConfiguration" for v in ADMISSION_VERSIONS}, text)
    unknown = [f"{k}" for k in doc if k not in ("apiVersion", "kind", "plugins")]
    plugins = doc.get("plugins") or []
    if not isinstance(plugins, list):
        raise ConfigError("strict decoding error: plugins: expected an array")
    base = os.path.dirname(path)
    out = []
    for i, entry in enumerate(plugins):
        if not isinstance(entry, dict):
            raise ConfigError(f"strict decoding error: plugins[{i}]: expected an object")
        unknown += [f"plugins[{i}].{k}" for k in entry if k not in ("name", "path", "configuration")]
        configuration = entry.get("configuration")
        if configuration is not None and not isinstance(configuration, dict):
            raise ConfigError(f"strict decoding error: plugins[{i}].configuration: expected an object")
        plugin_path = str(entry.get("path") or "")
        if plugin_path and not os.path.isabs(plugin_path):
            plugin_path = os.path.join(base or os.getcwd(), plugin_path)  # relative to the file, as upstream
        out.append(PluginConfiguration(str(entry.get("name") or ""), plugin_path, configuration))
    if unknown:
        raise ConfigError("strict decoding error: " + ", ".join(f"unknown field {errors.go_quote(u)}" for u in unknown))
    return AdmissionConfiguration(tuple(out))


def load_webhook_admission(doc: dict[str, Any]) -> WebhookAdmission:
    """A WebhookAdmissionConfiguration, and the kubeconfig file it names (upstream: webhook/config LoadConfig and
    NewDefaultAuthenticationInfoResolver)."""
    check_kind(doc, _WEBHOOK_KINDS)
    path = str(doc.get("kubeConfigFile") or "")
    if not os.path.isabs(path):
        raise ConfigError(str(errors.invalid("kubeConfigFile", path, "must be an absolute file path")))
    try:
        kubeconfig = decode_document(Path(path).read_text(), path)
    except OSError as err:
        raise ConfigError(os_error(err, "stat", path)) from None
    users = {str(u.get("name") or ""): dict(u.get("user") or {})
             for u in kubeconfig.get("users") or [] if isinstance(u, dict)}  # fmt: skip
    return WebhookAdmission(path, users)


def load_plugin_configs(path: str, enabled: list[str]) -> PluginConfigs:
    """Read `path` and the configuration of each enabled plugin that has one; a ConfigError says what is wrong,
    as upstream's `couldn't init admission plugin` / `failed to initialize admission plugin` errors do."""
    from .podsecurity.config import load_pod_security_configuration  # (they import this module)
    from .resource_quota.config import load_resource_quota_configuration

    try:
        config = read_admission_configuration(path)
    except ConfigError as err:
        raise ConfigError(f"failed to read plugin config: {err}") from None
    pod_security = resource_quota = None
    webhooks: dict[str, WebhookAdmission] = {}
    for name in enabled:
        try:
            doc = config.config_for(name)
            if doc is None:
                continue
            if name == "PodSecurity":
                pod_security = load_pod_security_configuration(doc)
            elif name == "ResourceQuota":
                resource_quota = load_resource_quota_configuration(doc)
            elif name in WEBHOOK_PLUGINS:
                webhooks[name] = load_webhook_admission(doc)
        except InitializationError as err:
            raise ConfigError(f"failed to initialize admission plugin {errors.go_quote(name)}: {err}") from None
        except ConfigError as err:
            raise ConfigError(f"couldn't init admission plugin {errors.go_quote(name)}: {err}") from None
    return PluginConfigs(pod_security, resource_quota, webhooks)
