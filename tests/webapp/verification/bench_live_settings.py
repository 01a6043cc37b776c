"""Settings of the daphne started by test_bench_live.py: the project's, with a 2 s bench budget and the
test suite's fast password hasher (tests/webapp/conftest.py), so the test's users can sign in."""

from webapp.settings import *  # noqa: F403 -- the real settings, two values changed

RLVR_BENCH_BUDGET_S = 2
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
