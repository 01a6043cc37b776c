"""What every built-in tiny model shares: the cache location, the character tokenizer, the Qwen2 builder.

The recipes that warm-start them live in tiny_model.py (2-digit addition) and tiny_chain.py (chain
arithmetic with a scratchpad); ``trainer.models.tiny_model`` re-exports these names.
"""

from __future__ import annotations

import os
import string
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

TINY_PREFIX = "tiny:"


def rlvr_home() -> Path:
    return Path(os.environ.get("RLVR_HOME", Path.home() / ".cache" / "rlvr-studio"))


def char_tokenizer() -> PreTrainedTokenizerFast:
    """One token per printable ASCII character, plus <pad>=0, <eos>=1, <bos>=2, <unk>=3."""
    vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3}
    for ch in string.digits + string.ascii_letters + string.punctuation + " \n":
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>", unk_token="<unk>"
    )
    tok.padding_side = "left"
    return tok


def build_tiny_model(
    out_dir: str | Path, hidden: int = 128, layers: int = 4, heads: int = 4, seed: int = 0
) -> Path:
    """Write a randomly initialised tiny Qwen2 model + char tokenizer to ``out_dir``."""
    tok = char_tokenizer()
    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.bos_token_id,
        tie_word_embeddings=True,
    )
    model = Qwen2ForCausalLM(cfg)
    out = Path(out_dir)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
