"""Role-based access control: the RBAC authorizer and the escalation checks on roles and bindings
(upstream: plugin/pkg/auth/authorizer/rbac and pkg/registry/rbac)."""

from __future__ import annotations

from .authorizer import RBACAuthorizer
from .escalation import install as install_escalation_checks
from .rules import CompiledRule, rule_allows, rules_allow

__all__ = ["CompiledRule", "RBACAuthorizer", "install_escalation_checks", "rule_allows", "rules_allow"]
