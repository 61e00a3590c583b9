"""Protobuf, the wire encoding client-go prefers: upstream's message table (`v1_32.json`, by `generate.py`), the
schema joined with the Go types (`schema.py`), and the codec between dicts and messages (`codec.py`, with its C
loop in `_fastpb.c`)."""
