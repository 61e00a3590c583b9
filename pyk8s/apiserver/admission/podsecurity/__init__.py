"""PodSecurity admission: the Pod Security Standards (privileged, baseline, restricted) chosen per namespace
by the `pod-security.kubernetes.io/*` labels (upstream: k8s.io/pod-security-admission and the in-tree plugin
plugin/pkg/admission/security/podsecurity). api.py holds levels, versions and labels, checks/ the checks,
evaluator.py which checks apply, admission.py the plugin."""

from __future__ import annotations

from .admission import PLUGIN_NAME, PodSecurity, PodSecurityConfiguration

__all__ = ["PLUGIN_NAME", "PodSecurity", "PodSecurityConfiguration"]
