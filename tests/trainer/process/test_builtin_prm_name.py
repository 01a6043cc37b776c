"""``tiny:chain-prm`` in a step scorer's ``model`` names the tiny chain PRM's cached folder (built on first use); every
other model is left for the scorer to resolve."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.process.prm_head import CHAIN_PRM, PRMParams
from trainer.process.records import step_scorer_model, with_builtin_model
from trainer.process.scorers import OracleChainParams
from trainer.process.tiny_prm import tiny_prm_path


def test_the_tiny_chain_prm_name_becomes_its_cached_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_HOME", str(tmp_path))
    folder = tiny_prm_path()
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")  # a finished build: nothing is rebuilt
    params = with_builtin_model(PRMParams(model=CHAIN_PRM, micro_batch_size=4))
    assert params.model == str(folder) and params.micro_batch_size == 4
    assert step_scorer_model(CHAIN_PRM) == str(folder)


def test_other_models_and_scorers_without_a_model_are_left_as_they_are() -> None:
    folder = PRMParams(model="/models/my-prm")
    assert with_builtin_model(folder) is folder
    oracle = OracleChainParams()
    assert with_builtin_model(oracle) is oracle
    assert step_scorer_model("/models/my-prm") == "/models/my-prm"
