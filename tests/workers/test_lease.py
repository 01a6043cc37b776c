"""The run lease: one live holder at a time, a dead holder's lease expires, Redis trouble never stops a run."""

from __future__ import annotations

import time

from tests.workers.helpers import FakeRedis
from workers.lease import Heartbeat, claim, holder_alive, lease_key


class Clock:
    """A manual clock whose ``sleep`` advances it and lets a simulated holder act."""

    def __init__(
        self, redis: FakeRedis | None = None, holder_refreshes: bool = False, appears_at: float | None = None
    ) -> None:
        self.now = 0.0
        self.redis, self.holder_refreshes, self.appears_at = redis, holder_refreshes, appears_at

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        if self.redis is None:
            return
        if self.holder_refreshes and self.now % 5 < seconds:  # the live holder beats every 5 s
            self.redis.set(lease_key(1), f"other@h/{self.now}", ex=20)
        if self.appears_at is not None and self.now >= self.appears_at:
            self.redis.set(lease_key(1), "other@h/late", ex=20)
            self.appears_at = None


def test_a_free_run_is_claimed_at_once() -> None:
    clock = Clock()
    redis = FakeRedis(clock)
    assert claim(1, "me@h", redis, sleep=clock.sleep, clock=clock) is not None
    assert clock.now == 0
    assert redis.get(lease_key(1)).startswith(b"me@h/")  # type: ignore[union-attr]


def test_a_run_whose_holder_keeps_beating_cannot_be_claimed() -> None:
    clock = Clock()
    redis = FakeRedis(clock)
    clock.redis, clock.holder_refreshes = redis, True
    redis.set(lease_key(1), "other@h/0", ex=20)

    assert claim(1, "me@h", redis, sleep=clock.sleep, clock=clock) is None
    assert clock.now <= 5.5  # one heartbeat was enough to see it alive


def test_a_dead_holder_s_lease_is_taken_over_once_it_expires() -> None:
    clock = Clock()
    redis = FakeRedis(clock)
    clock.redis = redis
    redis.set(lease_key(1), "dead@h/0", ex=20)

    assert claim(1, "me@h", redis, sleep=clock.sleep, clock=clock) is not None
    assert 20 <= clock.now <= 21


def test_a_missing_lease_is_given_two_heartbeats_to_appear() -> None:
    clock = Clock()
    assert not holder_alive(1, FakeRedis(clock), sleep=clock.sleep, clock=clock)
    assert 10 <= clock.now <= 11

    clock = Clock()
    redis = FakeRedis(clock)
    clock.redis, clock.appears_at = redis, 4.0  # e.g. Redis just came back and the holder rewrites it
    assert holder_alive(1, redis, sleep=clock.sleep, clock=clock)


def test_the_heartbeat_refreshes_the_lease_and_releases_it_at_the_end() -> None:
    redis = FakeRedis()
    tokens = set()
    with Heartbeat(1, "me@h", redis, heartbeat_s=0.05, ttl_s=1):
        for _ in range(20):
            time.sleep(0.02)
            token = redis.get(lease_key(1))
            if token is not None:
                tokens.add(token)
    assert len(tokens) >= 2
    assert redis.get(lease_key(1)) is None


def test_a_redis_outage_only_pauses_the_heartbeat() -> None:
    class Down(FakeRedis):
        def set(self, key: str, value: str, ex: int, nx: bool = False) -> bool:
            raise ConnectionError("Redis is down")

        def delete(self, key: str) -> int:
            raise ConnectionError("Redis is down")

    with Heartbeat(1, "me@h", Down(), heartbeat_s=0.01, ttl_s=1) as beat:
        time.sleep(0.05)
        assert beat._thread.is_alive()
