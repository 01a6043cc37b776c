"""Uploaded prompt data files (JSONL, JSON, CSV, Parquet), checked with the trainer's own loader."""
