"""RLVR Studio's web layer (Django). Importing this package alone loads neither Django nor torch."""
