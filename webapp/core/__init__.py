"""What every webapp app shares: the error types services raise (errors.py)."""
