"""Keys are made from integers only and checked whenever they come back; a local key never leaves the
store's root, not through ``..`` and not through a symlink planted inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.experiments.token_store import LocalTokenStore, checked_key, run_prefix, step_object_key


def test_keys_are_built_from_integers_only() -> None:
    key = step_object_key(12, 3)
    assert checked_key(key) == key and key.startswith("run-12/step-3-") and key.endswith(".z")
    assert step_object_key(12, 3) != key  # a random suffix: every write has an object of its own
    for run_id, step in [("12", 3), (12, "3"), (-1, 3), (12, True), (1.5, 3)]:
        with pytest.raises(ValueError, match="non-negative integer"):
            step_object_key(run_id, step)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        run_prefix("../1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "key",
    ["../outside.z", "run-1/../../outside.z", "/etc/passwd", "run-1/step-1-0123456789abcdef.z/..", "run-1/x"],
)
def test_a_key_that_is_not_one_of_ours_is_refused(tmp_path: Path, key: str) -> None:
    store = LocalTokenStore(tmp_path / "store")
    with pytest.raises(ValueError, match="not a token store key"):
        store.put(key, b"data")
    with pytest.raises(ValueError, match="not a token store key"):
        store.read_range(key, 0, 1)
    with pytest.raises(ValueError):
        store.delete([key])
    assert not (tmp_path / "outside.z").exists()


def test_a_symlink_inside_the_root_does_not_lead_out_of_it(tmp_path: Path) -> None:
    root, outside = tmp_path / "store", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (root / "run-5").symlink_to(outside, target_is_directory=True)
    store = LocalTokenStore(root)
    key = step_object_key(5, 1)
    with pytest.raises(ValueError, match="outside the store's root"):
        store.put(key, b"data")
    with pytest.raises(ValueError, match="outside the store's root"):
        store.delete_prefix(run_prefix(5))
    assert list(outside.iterdir()) == []


def test_the_whole_store_is_never_deleted_at_once(tmp_path: Path) -> None:
    store = LocalTokenStore(tmp_path / "store")
    store.put(step_object_key(1, 1), b"x")
    with pytest.raises(ValueError, match="needs a run's prefix"):
        store.delete_prefix("")
    assert store.total_bytes() == 1
