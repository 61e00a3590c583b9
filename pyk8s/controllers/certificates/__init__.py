"""Certificate controllers: the root CA publisher (rootcacertpublisher.py)."""

from .rootcacertpublisher import RootCACertPublisher

__all__ = ["RootCACertPublisher"]
