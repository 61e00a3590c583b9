"""The ServiceAccounts controller (serviceaccounts_controller.py)."""

from .serviceaccounts_controller import ServiceAccountsController

__all__ = ["ServiceAccountsController"]
