"""The built-in tiny model: a ~1M-parameter Qwen2-architecture LM with a character tokenizer.

Built locally (nothing is downloaded) and warm-started by a short supervised fine-tune on the demo task
(2-digit addition), so that its greedy accuracy starts low but not at zero and GRPO has signal to
amplify. It is saved as an ordinary Hugging Face checkpoint directory and loaded through
``AutoModelForCausalLM.from_pretrained(path)``, the same code path as a user's own checkpoint.

Built once and cached under ``$RLVR_HOME/models`` (default ``~/.cache/rlvr-studio/models``).

``tiny:addition-teacher`` is its stronger teacher for on-policy distillation (trainer/step/teacher.py): the same
tokenizer and architecture, warm-started from the student's weights and trained ``TEACHER_SFT_STEPS``
further on fresh problems, so its greedy accuracy is far higher (about 0.8 against the student's 0.3)
while it still shares the student's tokens and style (`rlvr init-model --teacher`, ~2 min on 2 cores).
"""

from __future__ import annotations

import os
import random
import shutil
import string
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from trainer.data.demo_task import addition_prompt

TINY_PREFIX = "tiny:"
# Bump when the architecture or warm-start recipe changes, so stale caches are rebuilt.
RECIPE_VERSION = 2
# Warm-start length: enough for a greedy accuracy well above zero but far from solved.
DEFAULT_SFT_STEPS = 1200
TEACHER_NAME = "tiny:addition-teacher"
# Extra SFT steps the teacher gets on top of the student's warm start (different problems: seed 1).
TEACHER_SFT_STEPS = 500
BUILT_IN_MODELS = ("tiny:addition", TEACHER_NAME)


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


def greedy_addition_accuracy(
    model: PreTrainedModel, tok: PreTrainedTokenizerBase, n: int = 200, seed: int = 1234
) -> float:
    """Fraction of random 2-digit additions the model answers exactly with greedy decoding."""
    rng = random.Random(seed)
    pairs = [(rng.randint(0, 99), rng.randint(0, 99)) for _ in range(n)]
    enc = tok([addition_prompt(a, b) for a, b in pairs], return_tensors="pt", padding=True, padding_side="left")
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model.generate(  # type: ignore[operator]
            **enc, max_new_tokens=5, do_sample=False, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id
        )
    model.train(was_training)
    texts = tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    return sum(t.strip() == str(a + b) for t, (a, b) in zip(texts, pairs, strict=True)) / n


def sft_warm_start(
    model_dir: str | Path,
    steps: int = DEFAULT_SFT_STEPS,
    batch_size: int = 64,
    lr: float = 1e-3,
    seed: int = 0,
    on_progress: Callable[[int, float], None] | None = None,
) -> float:
    """Supervised fine-tune the model in ``model_dir`` in place on "a+b=c<eos>"; returns greedy accuracy.

    A fixed number of steps (not a time budget) so the result is the same on every machine.
    """
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.train()
    rng = random.Random(seed)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for step in range(1, steps + 1):
        prompts, texts = [], []
        for _ in range(batch_size):
            a, b = rng.randint(0, 99), rng.randint(0, 99)
            prompts.append(addition_prompt(a, b))
            texts.append(prompts[-1] + str(a + b) + tok.eos_token)
        enc = tok(texts, return_tensors="pt", padding=True, padding_side="right")
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        for row, prompt in enumerate(prompts):  # learn the answer only: the operands are noise
            labels[row, : len(prompt)] = -100
        loss = model(**enc, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        if on_progress is not None:
            on_progress(step, loss.item())
    model.save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    return greedy_addition_accuracy(model, tok)


def tiny_model_path(name: str = "tiny:addition") -> Path:
    """Where the cached tiny model ``name`` lives (it may not be built yet)."""
    return rlvr_home() / "models" / f"{name.removeprefix(TINY_PREFIX)}-v{RECIPE_VERSION}"


def ensure_tiny_model(
    name: str = "tiny:addition",
    sft_steps: int | None = None,
    on_progress: Callable[[int, float], None] | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Return the cached tiny model directory, building and warm-starting it on first use.

    ``sft_steps``: the student's warm-start steps (default DEFAULT_SFT_STEPS), or for the teacher its
    extra steps on top of the student (default TEACHER_SFT_STEPS; the student is built first if needed).
    Built in a temporary directory and renamed into place, so an interrupted build never leaves a
    half-written model behind and two concurrent builders cannot corrupt each other.
    """
    if name not in BUILT_IN_MODELS:
        raise ValueError(f"unknown built-in model {name!r}; valid: {', '.join(BUILT_IN_MODELS)}")
    teacher = name == TEACHER_NAME
    if sft_steps is None:
        sft_steps = TEACHER_SFT_STEPS if teacher else DEFAULT_SFT_STEPS
    student = ensure_tiny_model(log=log) if teacher else None
    final = tiny_model_path(name)
    if (final / "config.json").exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    log(f"building the tiny {'teacher' if teacher else 'model'} (once) in {final} ...")
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
    try:
        if student is not None:  # the teacher continues from the student's weights, on other problems
            shutil.copytree(student, tmp, dirs_exist_ok=True)
            acc = sft_warm_start(tmp, steps=sft_steps, seed=1, on_progress=on_progress)
        else:
            build_tiny_model(tmp)
            acc = sft_warm_start(tmp, steps=sft_steps, on_progress=on_progress)
        (tmp / "WARM_START.txt").write_text(
            f"sft_steps={sft_steps}\ngreedy_accuracy={acc:.3f}\nrecipe_version={RECIPE_VERSION}\n"
        )
        try:
            tmp.rename(final)
        except OSError:  # another process finished first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log(f"{name} ready in {time.perf_counter() - t0:.0f}s (greedy accuracy after warm start {acc:.2f})")
    return final


def resolve_model_path(name_or_path: str) -> str:
    """'tiny:...' -> the cached built-in model (built on demand); anything else is returned as is."""
    if name_or_path.startswith(TINY_PREFIX):
        return str(ensure_tiny_model(name_or_path))
    return name_or_path
