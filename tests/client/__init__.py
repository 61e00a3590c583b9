"""Tests of the client machinery (pyk8s.client)."""
