"""Fixtures for tests, ours and our users': real servers started in temporary directories."""
