"""Torch threads per process, from the cores the processes share (trainer/models/threads.py)."""

from __future__ import annotations

import pytest

from trainer.models.threads import apply_torch_threads, threads_from_env, torch_thread_shares


def test_two_torch_processes_on_two_cores_get_one_thread_each() -> None:
    assert torch_thread_shares(2, 2) == [1, 1]


def test_the_cores_are_split_evenly_and_the_first_process_gets_the_remainder() -> None:
    assert torch_thread_shares(8, 2) == [4, 4]
    assert torch_thread_shares(5, 2) == [3, 2]
    assert torch_thread_shares(7, 3) == [3, 2, 2]


def test_more_processes_than_cores_get_one_thread_each() -> None:
    assert torch_thread_shares(1, 2) == [1, 1]


def test_a_bad_thread_count_in_the_environment_is_refused_by_name() -> None:
    assert threads_from_env({}) is None
    assert threads_from_env({"RLVR_TORCH_THREADS": "3"}) == 3
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(ValueError, match="RLVR_TORCH_THREADS must be a positive whole number"):
            threads_from_env({"RLVR_TORCH_THREADS": bad})


def test_the_thread_count_from_the_environment_is_what_torch_uses() -> None:
    import torch

    before = torch.get_num_threads()
    try:
        assert apply_torch_threads({"RLVR_TORCH_THREADS": "1"}) == 1
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
