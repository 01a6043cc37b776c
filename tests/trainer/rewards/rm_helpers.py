"""A tiny scalar reward model for tests: a tiny Qwen2 causal LM given a one-output sequence-classification head."""

from __future__ import annotations

from pathlib import Path

import torch


def make_reward_model(causal_lm_dir: Path, out_dir: Path, seed: int = 0) -> Path:
    """``AutoModelForSequenceClassification`` with num_labels 1 on ``causal_lm_dir``'s weights, saved with its
    tokenizer (the score head is freshly initialised from ``seed``: scores differ from text to text)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging

    torch.manual_seed(seed)
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()  # the new head's 'newly initialised' report
    try:
        model = AutoModelForSequenceClassification.from_pretrained(causal_lm_dir, num_labels=1)
    finally:
        logging.set_verbosity(verbosity)
    model.save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(causal_lm_dir).save_pretrained(out_dir)
    return out_dir
