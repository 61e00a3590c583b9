"""Upstream's Go API types as data: the generated table (`v1_32.json`, by `generate.py`) and the typed round
trip built on it (`codec.py`)."""
