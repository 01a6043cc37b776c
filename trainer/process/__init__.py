"""Process rewards: steps, step scorers and their records (see README.md)."""
