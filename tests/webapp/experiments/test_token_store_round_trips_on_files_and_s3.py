"""The token store keeps whole objects and reads byte ranges back, on the local filesystem and on a real
S3-compatible server (moto's, in its own process); store_rollouts and the rollout detail go through it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from pytest_django import Settings
from rest_framework.test import APIClient

from tests.webapp.helpers import rollout_record
from trainer.sinks import TOKEN_CHANNELS
from webapp.experiments.models import Rollout, Run
from webapp.experiments.rollout_writes import store_rollouts
from webapp.experiments.selectors import rollout_detail
from webapp.experiments.token_store import (
    LocalTokenStore,
    S3TokenStore,
    TokenDataMissing,
    TokenStore,
    run_prefix,
    step_object_key,
    token_store,
)


def exercise(store: TokenStore) -> None:
    first, second, other = step_object_key(7, 1), step_object_key(7, 2), step_object_key(8, 1)
    store.put(first, b"0123456789")
    store.put(second, b"abc")
    store.put(other, b"xyz!")
    assert store.read_range(first, 3, 4) == b"3456"
    assert store.read_range(second, 0, 3) == b"abc"
    assert (store.total_bytes(run_prefix(7)), store.total_bytes(run_prefix(8)), store.total_bytes()) == (
        13,
        4,
        17,
    )
    store.delete([second, step_object_key(7, 9)])  # a missing key is no error
    with pytest.raises(TokenDataMissing):
        store.read_range(second, 0, 3)
    with pytest.raises(TokenDataMissing):
        store.read_range(first, 8, 5)  # past the end
    store.delete_prefix(run_prefix(7))
    assert store.total_bytes(run_prefix(7)) == 0
    assert store.read_range(other, 0, 4) == b"xyz!"  # another run's objects stay


def test_the_filesystem_store_round_trips(tmp_path: Path) -> None:
    exercise(LocalTokenStore(tmp_path / "store"))


def test_the_s3_store_round_trips_against_a_real_s3_server(db: None, s3_token_store: str) -> None:
    store = token_store()
    assert isinstance(store, S3TokenStore) and store.bucket == s3_token_store and store.prefix == "tokens/"
    exercise(store)


@pytest.mark.parametrize("backend", ["files", "s3"])
def test_a_stored_step_reads_back_through_the_rollout_detail(
    run: Run, backend: str, request: pytest.FixtureRequest, settings: Settings
) -> None:
    if backend == "s3":
        request.getfixturevalue("s3_token_store")
    records = [rollout_record(1, g, s, n_tokens=20 + g) for g in range(3) for s in range(2)]
    assert store_rollouts(run_id=run.pk, step=1, records=records, replace_step=True) == 6

    rows = list(Rollout.objects.filter(run=run).order_by("group", "sample_index"))
    assert len({row.token_key for row in rows}) == 1  # one object per (run, step, write)
    assert all(not row.token_data and row.tokens == [] for row in rows)  # nothing inline any more
    assert token_store().total_bytes(run_prefix(run.pk)) == sum(row.token_size for row in rows)
    for row, original in zip(rows, records, strict=True):
        detail = rollout_detail(run=run, rollout_id=row.pk)
        assert detail.token_ids == original.token_ids and detail.tokens == original.tokens
        assert detail.channels["ref_logprob"] is None
        for channel in TOKEN_CHANNELS:
            if channel != "ref_logprob":
                got = detail.channels[channel]
                assert got is not None
                assert all(
                    math.isclose(a or 0.0, b, rel_tol=1e-6)
                    for a, b in zip(got, original.token_values[channel], strict=True)
                )


def test_a_rollout_whose_object_is_gone_answers_410_saying_what_to_check(run: Run, alice: User) -> None:
    store_rollouts(run_id=run.pk, step=1, records=[rollout_record(1)], replace_step=True)
    row = Rollout.objects.get(run=run)
    token_store().delete([row.token_key])
    client = APIClient()
    client.force_authenticate(user=alice)
    response = client.get(f"/api/runs/{run.pk}/rollouts/{row.pk}/")
    assert response.status_code == 410
    assert "RLVR_TOKEN_STORE" in response.json()["message"] and response.json()["extra"] == {}
