"""Celery tasks: the only place where webapp and trainer meet (see README.md)."""
