"""Django settings for RLVR Studio, read from environment variables (see webapp/env.py).

Embedded default: SQLite and run outputs under ``$RLVR_DATA_DIR`` (``<repo>/.rlvr-data``), Redis at
``REDIS_URL``. Self-hosted: ``DATABASE_URL=postgres://...``, ``RLVR_SECRET_KEY``, ``RLVR_ALLOWED_HOSTS``.
Every variable read here is listed in ``ENV_VARIABLES`` at the end, which the compose-file test checks.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from webapp.env import (
    database_from_url,
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_paths,
    env_str,
    sqlite_database,
)

django_stubs_ext.monkeypatch()  # lets Django's generic classes be subscripted at runtime (ModelAdmin[Run])

REPO_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("RLVR_DATA_DIR", str(REPO_DIR / ".rlvr-data"))).resolve()
RLVR_RUNS_DIR = Path(env_str("RLVR_RUNS_DIR", str(DATA_DIR / "runs"))).resolve()
RLVR_DATASETS_DIR = DATA_DIR / "datasets"
# Folders a config from the web may load models from (webapp/core/paths.py): a model is a tiny: name, a
# checkpoint of a run in the same project, or a folder under one of these. The tiny models' cache
# ($RLVR_HOME/models, as trainer/models/tiny_model.py) and $RLVR_DATA_DIR/models by default.
RLVR_HOME = Path(env_str("RLVR_HOME", str(Path.home() / ".cache" / "rlvr-studio")))
RLVR_MODEL_ROOTS = env_paths("RLVR_MODEL_ROOTS", [RLVR_HOME / "models", DATA_DIR / "models"])
# Rollout servers (`rlvr rollout-server`) that configs may name in rollout.vllm_server_url, e.g. http://rollout:8100.
RLVR_ROLLOUT_SERVERS = env_list("RLVR_ROLLOUT_SERVERS", [])
# OpenAI-compatible judge endpoints a reward source may call (URL prefixes, e.g. https://api.openai.com/v1): the
# same rule as rollout servers (webapp/experiments/config_paths.py). Empty: no judge endpoint is allowed.
RLVR_JUDGE_ENDPOINTS = env_list("RLVR_JUDGE_ENDPOINTS", [])
# OpenEnv environment servers an experiment's environment (name: openenv) may drive, as base URLs (e.g.
# http://envs:8000): exactly a listed one. Empty: no OpenEnv server is allowed.
RLVR_ENVIRONMENT_SERVERS = env_list("RLVR_ENVIRONMENT_SERVERS", [])

DEBUG = env_bool("RLVR_DEBUG", False)

# --- secret key ------------------------------------------------------------------------------------
# Placeholders that must never sign sessions on a real server (.env.example ships the first one).
PLACEHOLDER_SECRET_KEYS = frozenset({"change-me", "changeme", "secret", "insecure"})
SECRET_KEY_HELP = (
    "set RLVR_SECRET_KEY to a long random string, e.g. the output of "
    "`python -c 'import secrets; print(secrets.token_urlsafe(50))'` (or set RLVR_DEBUG=1 on a "
    "development machine to use a key generated into RLVR_DATA_DIR)"
)


def _development_secret_key(data_dir: Path) -> str:
    """A random key generated once per data directory: good enough for one developer's machine."""
    path = data_dir / "dev-secret-key"
    if path.is_file():
        return path.read_text(encoding="utf-8").strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key, encoding="utf-8")
    path.chmod(0o600)
    return key


_TESTING = "PYTEST_VERSION" in os.environ  # set by pytest itself while a test session runs
SECRET_KEY = env_str("RLVR_SECRET_KEY", "")
if SECRET_KEY.lower() in PLACEHOLDER_SECRET_KEYS and not DEBUG:
    raise ImproperlyConfigured(f"RLVR_SECRET_KEY is the placeholder {SECRET_KEY!r}: {SECRET_KEY_HELP}")
if not SECRET_KEY and (DEBUG or _TESTING):
    SECRET_KEY = _development_secret_key(DATA_DIR)
# Otherwise it stays empty: tools that sign nothing (migrate, mypy, collectstatic) still work, Django refuses
# to sign a session or CSRF token with it, and the check in webapp/core/checks.py says what to set.
RLVR_SECRET_KEY_MISSING = not SECRET_KEY

# The Fernet key that encrypts project secrets (judge API keys) at rest (webapp/rewards/secrets.py). Empty: one is
# derived from SECRET_KEY, so rotating RLVR_SECRET_KEY then makes stored secrets unreadable until set again.
SECRETS_KEY_HELP = (
    "set RLVR_SECRETS_KEY to a Fernet key, e.g. the output of "
    "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`, or leave it "
    "empty to derive one from RLVR_SECRET_KEY"
)
RLVR_SECRETS_KEY = env_str("RLVR_SECRETS_KEY", "")
if RLVR_SECRETS_KEY:
    try:
        _fernet_key_ok = len(base64.urlsafe_b64decode(RLVR_SECRETS_KEY.encode("ascii"))) == 32
    except (ValueError, UnicodeEncodeError):
        _fernet_key_ok = False
    if not _fernet_key_ok:
        raise ImproperlyConfigured(
            f"RLVR_SECRETS_KEY is not a Fernet key (32 url-safe base64 bytes): {SECRETS_KEY_HELP}"
        )

ALLOWED_HOSTS = env_list("RLVR_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("RLVR_CSRF_TRUSTED_ORIGINS", [])

# --- applications --------------------------------------------------------------------------------
INSTALLED_APPS = [
    "daphne",  # first: its runserver serves ASGI (websockets) too
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "axes",  # login lockout (django-axes): webapp/accounts/lockout.py
    "drf_spectacular",
    "channels",
    "webapp.core",
    "webapp.accounts",
    "webapp.teams",
    "webapp.experiments",
    "webapp.datafiles",
    "webapp.verification",
    "webapp.rubrics",
    "webapp.annotation",
    "webapp.rewards",
    "webapp.workspaces",
    "webapp.pages",
    "webapp.benchmarks",
    "webapp.training_api",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "webapp.accounts.csp.content_security_policy_middleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "webapp.core.limits.RequestLimitsMiddleware",  # before anything reads the body: size and NUL checks
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into its 429 answer
]

ROOT_URLCONF = "webapp.urls"
ASGI_APPLICATION = "webapp.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [REPO_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database ------------------------------------------------------------------------------------
_DATABASE_URL = env_str("DATABASE_URL", "")
DATABASES = {
    "default": (
        database_from_url(_DATABASE_URL, base_dir=REPO_DIR)
        if _DATABASE_URL
        else sqlite_database(DATA_DIR / "db.sqlite3")
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "webapp.accounts.passwords.RevokeTokensOnPasswordChange"},  # rejects nothing
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# --- accounts: login lockout, API tokens, proxies, cookies (webapp/accounts/) ----------------------
# Reverse proxies in front of the server. 0: X-Forwarded-For is ignored (REMOTE_ADDR is the client);
# N: the N-th X-Forwarded-For entry from the right is. Used by the lockout and the API throttles alike.
RLVR_TRUSTED_PROXIES = env_int("RLVR_TRUSTED_PROXIES", 0, minimum=0)
RLVR_API_TOKEN_DAYS = env_int("RLVR_API_TOKEN_DAYS", 30, minimum=1)
AUTHENTICATION_BACKENDS = [
    "webapp.accounts.lockout.LockoutBackend",  # first: refuses a locked-out login before any password check
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("RLVR_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("RLVR_LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
# A username locks after AXES_FAILURE_LIMIT failures from anywhere (rotating addresses or X-Forwarded-For gains
# nothing), and so does a username at one address. An address alone is never locked at that limit: behind a
# proxy or NAT every user can share one, so five guesses would lock them all out. It has its own, much looser
# limit (failures for any usernames within the cool-off), as a brake on guessing many usernames.
AXES_LOCKOUT_PARAMETERS = [["username"], ["username", "ip_address"]]
RLVR_LOGIN_ADDRESS_FAILURE_LIMIT = 20 * AXES_FAILURE_LIMIT
AXES_HANDLER = "webapp.accounts.lockout.LockoutHandler"
AXES_USERNAME_CALLABLE = "webapp.accounts.lockout.lockout_username"  # ALICE and ' alice' count as alice
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "webapp.accounts.lockout.client_ip"
AXES_LOCKOUT_CALLABLE = "webapp.accounts.lockout.lockout_response"
AXES_VERBOSE = False
RLVR_HTTPS = env_bool("RLVR_HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = RLVR_HTTPS
SESSION_COOKIE_HTTPONLY = True
if RLVR_HTTPS and RLVR_TRUSTED_PROXIES > 0:  # only a trusted proxy may say the client used HTTPS
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- static files (whitenoise serves them from the web process; no CDN) ---------------------------
STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"


# plotly.js is served from the plotly package's own bundled copy: never a CDN (self-hosted installs are offline).
def _plotly_js_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("plotly")
    if spec is None or spec.origin is None:
        raise ImproperlyConfigured("the plotly package is not installed: pip install plotly")
    return Path(spec.origin).parent / "package_data"


STATICFILES_DIRS = [REPO_DIR / "static", ("plotly", _plotly_js_dir())]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from static/ and the apps, so the embedded mode works without collectstatic.
WHITENOISE_USE_FINDERS = True
with contextlib.suppress(OSError):  # whitenoise warns at each start while STATIC_ROOT is missing
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# --- Redis, Channels, Celery ----------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

# "memory" is for unit tests of a single process only: it cannot reach a worker's events.
_CHANNEL_LAYER = env_choice("RLVR_CHANNEL_LAYER", "redis", ("redis", "memory"))
CHANNEL_LAYERS: dict[str, dict[str, Any]] = {
    "default": (
        {"BACKEND": "channels.layers.InMemoryChannelLayer"}
        if _CHANNEL_LAYER == "memory"
        else {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}
    )
}

# Read with namespace="CELERY" by webapp/core/tasks_by_name.py (the one Celery app; workers/celery_app.py adds its tasks).
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {"workers.tasks.run_training": {"queue": "training"}}
CELERY_TASK_TRACK_STARTED = True
# With acks_late, Redis hands an unacknowledged task to another worker after this long. A training run
# can take hours, so it must exceed the longest run, or a healthy run would be started twice.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("RLVR_TASK_VISIBILITY_TIMEOUT_S", 86400, minimum=60)
}

# False: launching a run stores it as queued but sends nothing to Celery (tests, a web-only process).
RLVR_ENQUEUE = env_bool("RLVR_ENQUEUE", True)
# Worker reliability (workers/db_retry.py, workers/sweep.py): how long a worker retries its writes while the
# database is unreachable; how often one worker looks for stranded runs; attempts before the sweep fails a run.
RLVR_DB_RETRY_S = env_int("RLVR_DB_RETRY_S", 90, minimum=1)
RLVR_SWEEP_S = env_int("RLVR_SWEEP_S", 30, minimum=1)
RLVR_MAX_ATTEMPTS = env_int("RLVR_MAX_ATTEMPTS", 3, minimum=1)
RLVR_MAX_UPLOAD_MB = env_int("RLVR_MAX_UPLOAD_MB", 200, minimum=1)
# Every other request body (JSON, forms): Django's own 2.5 MB default, answered 413 (webapp/core/limits.py).
RLVR_MAX_BODY_KB = env_int("RLVR_MAX_BODY_KB", 2560, minimum=64)
DATA_UPLOAD_MAX_MEMORY_SIZE = RLVR_MAX_BODY_KB * 1024
# A Tinker API model's worker (workers/tasks_training_api.py) lets go of it after this many idle seconds, its
# state saved (the next call reloads it).
RLVR_TINKER_IDLE_S = env_int("RLVR_TINKER_IDLE_S", 300, minimum=5)
# A session whose client sent no heartbeat for this long ends its idle models' runs (succeeded); above the SDK's
# 10 s heartbeat period, so a live client is never taken for gone.
RLVR_TINKER_SESSION_GONE_S = env_int("RLVR_TINKER_SESSION_GONE_S", 60, minimum=11)
# The ingest endpoint's batches (outside runs' rollouts with per-token arrays; webapp/ingest/parsers.py).
RLVR_MAX_INGEST_MB = env_int("RLVR_MAX_INGEST_MB", 64, minimum=1)

# --- rollout storage (webapp/experiments/token_store.py, retention.py; docs/rollout_storage.md) -----
# Per-token arrays of rollouts: an absolute folder (the same one on the web server and every worker) or
# s3://bucket/prefix (RLVR_S3_ENDPOINT_URL for MinIO and other S3-compatible servers; AWS_* credentials).
RLVR_TOKEN_STORE = env_str("RLVR_TOKEN_STORE", str(DATA_DIR / "rollout-tokens"))
if not (
    RLVR_TOKEN_STORE.startswith("/") or (RLVR_TOKEN_STORE.startswith("s3://") and len(RLVR_TOKEN_STORE) > 5)
):
    raise ImproperlyConfigured(
        f"RLVR_TOKEN_STORE={RLVR_TOKEN_STORE!r} is neither an absolute folder nor s3://bucket/prefix"
    )
RLVR_S3_ENDPOINT_URL = env_str("RLVR_S3_ENDPOINT_URL", "")


def _json_object(name: str, raw: str, default: dict[str, Any]) -> dict[str, Any]:
    if not raw:
        return dict(default)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not JSON ({err}): write e.g. {json.dumps(default)}"
        ) from None
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a JSON object: write e.g. {json.dumps(default)}")
    return value


# The retention policy of a run launched without one (checked at start-up: webapp/experiments/apps.py).
RLVR_ROLLOUT_RETENTION = _json_object(
    "RLVR_ROLLOUT_RETENTION", env_str("RLVR_ROLLOUT_RETENTION", ""), {"keep": "all"}
)

# --- REST API --------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Token first: an unauthenticated API call then answers 401 with "WWW-Authenticate: Token".
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "webapp.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "NUM_PROXIES": RLVR_TRUSTED_PROXIES,  # throttles key on the client address as the proxies saw it
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "webapp.api.exception_handler.api_exception_handler",
    # NUL, lone surrogates, NaN / Infinity and deep nesting are a 400 (webapp/api/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "webapp.api.parsers.StrictJSONParser",
        "webapp.api.parsers.StrictFormParser",
        "webapp.api.parsers.StrictMultiPartParser",
    ],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "RLVR Studio API",
    "DESCRIPTION": "Projects, experiments, runs, metrics and rollouts of RLVR Studio. "
    "Errors have one shape: {message, extra: {fields: {path: [messages]}}}.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Runs have a `not_queued` status that evaluations do not: name each status set after its model.
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "webapp.experiments.models.RunStatus",
        "EvalStatusEnum": "webapp.benchmarks.models.EvalStatus",
        # Three choice sets in fields named `kind`: a verifier's audit/rescore job, a reward job, a reward source.
        "VerificationJobKindEnum": "webapp.verification.models.JobKind",
        "RewardJobKindEnum": "webapp.rewards.models.JobKind",
        "RewardSourceKindEnum": "webapp.rewards.models.SourceKind",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {
        "handlers": ["console"],
        "level": env_choice("RLVR_LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR")),
    },
}

# Every environment variable read above; tests check the compose file and .env.example against it.
ENV_VARIABLES = (
    "RLVR_DATA_DIR",
    "RLVR_RUNS_DIR",
    "RLVR_HOME",
    "RLVR_MODEL_ROOTS",
    "RLVR_ROLLOUT_SERVERS",
    "RLVR_JUDGE_ENDPOINTS",
    "RLVR_ENVIRONMENT_SERVERS",
    "RLVR_SECRETS_KEY",
    "RLVR_DEBUG",
    "RLVR_SECRET_KEY",
    "RLVR_ALLOWED_HOSTS",
    "RLVR_CSRF_TRUSTED_ORIGINS",
    "DATABASE_URL",
    "REDIS_URL",
    "RLVR_CHANNEL_LAYER",
    "RLVR_TASK_VISIBILITY_TIMEOUT_S",
    "RLVR_ENQUEUE",
    "RLVR_DB_RETRY_S",
    "RLVR_SWEEP_S",
    "RLVR_MAX_ATTEMPTS",
    "RLVR_MAX_UPLOAD_MB",
    "RLVR_MAX_BODY_KB",
    "RLVR_MAX_INGEST_MB",
    "RLVR_TINKER_IDLE_S",
    "RLVR_TINKER_SESSION_GONE_S",
    "RLVR_TOKEN_STORE",
    "RLVR_S3_ENDPOINT_URL",
    "RLVR_ROLLOUT_RETENTION",
    "RLVR_LOG_LEVEL",
    "RLVR_TRUSTED_PROXIES",
    "RLVR_API_TOKEN_DAYS",
    "RLVR_LOGIN_FAILURE_LIMIT",
    "RLVR_LOGIN_LOCKOUT_MINUTES",
    "RLVR_HTTPS",
)
