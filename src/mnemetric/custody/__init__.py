"""Custody: the evidence behind every published number (run manifests, hashes, the task inventory)."""
