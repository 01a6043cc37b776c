"""A real S3-compatible server for the token store tests: moto's server in its own process (no mocks in
this process: boto3 talks HTTP to it as it would to MinIO)."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_django import Settings

from webapp.stack import free_port, port_open


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log_path = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not port_open("127.0.0.1", port):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"moto_server did not start: {Path(log_path).read_text(errors='replace')[-2000:]}"
                )
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def s3_token_store(settings: Settings, monkeypatch: pytest.MonkeyPatch, s3_endpoint: str) -> str:
    """RLVR_TOKEN_STORE on a fresh bucket of the moto server (created by the store's first write)."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test-key", "AWS_SECRET_ACCESS_KEY": "test-secret", "AWS_DEFAULT_REGION": "us-east-1",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    bucket = f"rollouts-{uuid.uuid4().hex[:12]}"
    settings.RLVR_TOKEN_STORE = f"s3://{bucket}/tokens"
    settings.RLVR_S3_ENDPOINT_URL = s3_endpoint
    return bucket


LEASE_REDIS_DB = 13  # not the workers' database: no worker of another test session holds a lease here


@pytest.fixture
def lease_redis(settings: Settings) -> Iterator[Any]:
    """The real Redis (REDIS_URL's server, its own database number) as the run leases' store; the test's
    lease keys are deleted afterwards. Fails in CI (RLVR_REQUIRE_SERVICES) and skips elsewhere without Redis."""
    import os

    import redis

    url = redis.connection.parse_url(str(settings.REDIS_URL))
    client = redis.Redis(host=url.get("host", "127.0.0.1"), port=url.get("port", 6379), db=LEASE_REDIS_DB,
                         socket_connect_timeout=1)  # fmt: skip
    try:
        client.ping()
    except redis.RedisError:
        (pytest.fail if os.environ.get("RLVR_REQUIRE_SERVICES") else pytest.skip)(
            f"needs Redis at {settings.REDIS_URL}"
        )
    settings.REDIS_URL = f"redis://{url.get('host', '127.0.0.1')}:{url.get('port', 6379)}/{LEASE_REDIS_DB}"
    yield client
    keys = list(client.scan_iter(match="rlvr:run-lease:*"))
    if keys:
        client.delete(*keys)
