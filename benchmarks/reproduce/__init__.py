"""Reproduction harness: each catalogued method against its comparison arm on the chain-arithmetic
reasoning task, 8 paired seeds, with effect, 95% interval and minimum detectable effect per claim part.

``python -m benchmarks.reproduce.run`` trains what is not stored yet (arms keyed by code revision, model hashes
and config) and rewrites results.json, docs/reproduction.md and docs/reproduction_curves.csv. Methods are
listed in ``methods_<area>.py`` files, each exposing ``METHODS: list[Method]``; README.md says the rest.
"""
