"""Arithmetic environment server components."""
