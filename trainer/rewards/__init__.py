"""Learned reward sources around the verifiers: training, evaluating and watching them (see README.md beside this file)."""
