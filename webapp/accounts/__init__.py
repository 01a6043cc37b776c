"""Accounts that hold: hashed, expiring API tokens; login lockout (django-axes); security headers."""
