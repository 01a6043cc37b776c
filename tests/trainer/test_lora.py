"""LoRA through peft: only adapter weights train, the KL reference is the adapter-free base, checkpoints
hold adapters and resume, and export merges them into a plain model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from tests.trainer.loop_helpers import tiny_config
from trainer.config import config_from_dict
from trainer.errors import CheckpointError
from trainer.models.checkpoint import latest_checkpoint
from trainer.models.lora import is_adapter_dir, merge_and_export, merged_named_weights
from trainer.step.loop import train
from trainer.step.run_setup import build_run

LORA = {"lora_r": 4, "lora_alpha": 8.0, "lora_target_modules": ["q_proj", "v_proj"]}


def _lora_config(model_dir: Path, out: Path, **algorithm: object):
    model = {"name_or_path": str(model_dir), **LORA}
    return tiny_config(model_dir, out, model=model, algorithm=dict(algorithm) or {"beta": 0.0})


def test_lora_training_changes_only_adapter_weights(random_model_dir: Path, tmp_path: Path) -> None:
    cfg = _lora_config(random_model_dir, tmp_path / "run", beta=0.05)
    base = AutoModelForCausalLM.from_pretrained(random_model_dir)
    result = train(cfg, log=lambda _: None)
    assert result.status == "succeeded"
    ckpt = latest_checkpoint(tmp_path / "run")
    assert ckpt is not None and is_adapter_dir(ckpt)
    adapter = load_file(ckpt / "adapter_model.safetensors")
    assert adapter and all("lora_" in k for k in adapter)
    assert any(k.endswith("lora_B.weight") and v.abs().sum() > 0 for k, v in adapter.items())  # B starts at 0

    run = build_run(cfg, resume_from=ckpt, log=lambda _: None)
    trainable = {n for n, p in run.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    base_weights = dict(base.named_parameters())
    for name, param in run.model.named_parameters():
        if "lora_" in name:
            continue
        clean = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        assert torch.equal(param.detach(), base_weights[clean].detach()), f"{clean} changed"


def test_reference_is_the_base_with_adapter_disabled(random_model_dir: Path, tmp_path: Path) -> None:
    cfg = _lora_config(random_model_dir, tmp_path / "run", beta=0.1)
    run = build_run(cfg, log=lambda _: None)
    assert run.ref_model is None  # no second copy of the weights
    with torch.no_grad():  # make the adapter non-trivial, so policy != reference
        for name, p in run.model.named_parameters():
            if "lora_B" in name:
                p.fill_(0.05)
    batch = run.engine.generate(["12+34="] * 4, run.sampling, run.generator)
    ref = run.reference_logprobs(batch)
    assert ref is not None
    base = AutoModelForCausalLM.from_pretrained(random_model_dir)
    from trainer.step.optimize import batch_logprobs

    expected = batch_logprobs(base, batch, 8, cfg.rollout.temperature)
    policy = batch_logprobs(run.model, batch, 8, cfg.rollout.temperature)
    mask = batch.completion_mask.bool()
    assert torch.allclose(ref[mask], expected[mask], atol=1e-5)
    assert not torch.allclose(policy[mask], expected[mask], atol=1e-3)


def test_export_merges_adapters_into_a_plain_model(random_model_dir: Path, tmp_path: Path) -> None:
    cfg = _lora_config(random_model_dir, tmp_path / "run")
    train(cfg, log=lambda _: None)
    ckpt = latest_checkpoint(tmp_path / "run")
    assert ckpt is not None
    run = build_run(cfg, resume_from=ckpt, log=lambda _: None)
    merged_in_memory = dict(merged_named_weights(run.model))
    out = merge_and_export(ckpt, tmp_path / "merged")
    assert not is_adapter_dir(out)
    plain = AutoModelForCausalLM.from_pretrained(out)
    for name, param in plain.named_parameters():
        assert torch.allclose(param, merged_in_memory[name], atol=1e-6), name
    ids = torch.tensor([[5, 6, 7, 8]])
    run.model.eval()
    with torch.no_grad():
        assert torch.allclose(plain(ids).logits, run.model(ids).logits, atol=1e-4)


def test_resuming_a_lora_checkpoint_without_lora_is_refused(random_model_dir: Path, tmp_path: Path) -> None:
    cfg = _lora_config(random_model_dir, tmp_path / "run")
    train(cfg, log=lambda _: None)
    data = cfg.model_dump(mode="json")
    data["model"]["lora_r"] = 0
    with pytest.raises(CheckpointError, match=r"model\.lora_r"):
        build_run(config_from_dict(data), resume_from=tmp_path / "run", log=lambda _: None)


@pytest.mark.parametrize("targets", [["o_proj"], ["gate_proj", "down_proj"]])
def test_adapters_go_exactly_on_the_chosen_modules(random_model_dir: Path, targets: list[str]) -> None:
    from trainer.models.lora import apply_lora

    model = AutoModelForCausalLM.from_pretrained(random_model_dir)
    wrapped = apply_lora(model, r=4, alpha=8.0, dropout=0.0, target_modules=targets)
    adapted = {
        n.split(".lora_A")[0].rsplit(".", 1)[-1] for n, _ in wrapped.named_parameters() if ".lora_A" in n
    }
    assert adapted == set(targets)
