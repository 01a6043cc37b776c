"""Reproduction harness: each catalogued method against plain GRPO on the tiny model (issue 5).

``python -m benchmarks.reproduce.run --methods all --seeds 0 1 2 --steps 100`` trains every method and a
plain-GRPO baseline with the same seeds and budget, then writes results.json and docs/reproduction.md.
Methods are listed in ``methods_<area>.py`` files, each exposing ``METHODS: list[Method]``.
"""
