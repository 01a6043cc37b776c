"""Benchmarks: Avg@k, Pass@k and maj@k of a model on verified problems, offline and during training."""
