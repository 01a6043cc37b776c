"""Reproduction harness: each catalogued method against the comparisons its paper makes on the chain-arithmetic
reasoning task, 8 paired seeds, with effect, 95% interval, minimum detectable effect, Holm-adjusted p-values and
equivalence margins per claim part.

``python -m benchmarks.reproduce.run`` trains what is not stored yet (arms keyed by what was trained: config with
model names, seed, steps, evaluation; provenance recorded inside) and rewrites results.json, docs/reproduction.md
and docs/reproduction_curves.csv; ``--no-train`` rebuilds them from the store alone. Methods are listed in
``methods_<area>.py`` files, each exposing ``METHODS: list[Method]``; README.md says the rest.
"""
