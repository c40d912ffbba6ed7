"""Retrieval stages: each maps a batch of topics (or a run) to a run, and they compose with ``>>``."""
