"""The built-in tiny models: ~1M-parameter Qwen2-architecture LMs with a character tokenizer.

Built locally (nothing is downloaded) and warm-started by a short supervised fine-tune on their task, so
that the student's greedy accuracy starts low but not at zero and RL has signal to amplify; what each
model is trained on, and for how long, is its recipe (``tiny_recipes.py``): ``tiny:addition`` and its
teacher (two-digit addition, the first demo), ``tiny:chain`` and its teacher (chain arithmetic with a
scratchpad, the demo). Each is saved as an ordinary Hugging Face checkpoint directory and loaded through
``AutoModelForCausalLM.from_pretrained(path)``, the same code path as a user's own checkpoint.

Cached under ``$RLVR_HOME/models`` (default ``~/.cache/rlvr-studio/models``), copied there on first use
from the weights shipped in the repository (``shipped_weights.py``: the same models on every processor) or,
when those are absent or do not match the recipe, built from the recipe; a build reports every step to
``on_progress`` (the CLI's progress bar, the run page's build phase).

A teacher and its student share the tokenizer and architecture, and a recipe may start from another
built-in model's weights: ``tiny:addition-teacher`` is the student trained further on other problems (a
greedy accuracy of about 0.7 against 0.3), while ``tiny:chain`` is ``tiny:chain-teacher`` fine-tuned into
the habit of answering most problems bare (about 0.09 against 0.28; `rlvr init-model --teacher` builds
a model's teacher).
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import string
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

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

from trainer.models.shipped_weights import copy_shipped, shipped_problem
from trainer.models.tiny_recipes import RECIPES, TinyRecipe

_T = TypeVar("_T")
TINY_PREFIX = "tiny:"
DEFAULT_MODEL = "tiny:addition"
DEMO_MODEL = (
    "tiny:chain"  # the demo's student (trainer/presets/demo.yaml); its teacher is DEMO_MODEL + "-teacher"
)
TEACHER_NAME = "tiny:addition-teacher"
# The addition recipe's lengths (kept as names: the CLI and tests read them).
DEFAULT_SFT_STEPS = RECIPES[DEFAULT_MODEL].sft_steps
TEACHER_SFT_STEPS = RECIPES[TEACHER_NAME].sft_steps
BUILT_IN_MODELS = tuple(RECIPES)


@dataclass(frozen=True)
class BuildProgress:
    """How far the warm start of one built-in model is: what ``on_progress`` callbacks receive."""

    model: str  # the built-in name, e.g. "tiny:addition"
    done: int  # warm-start SFT steps done
    total: int  # warm-start SFT steps in all
    elapsed_s: float  # seconds since this model's build began
    loss: float  # the last step's SFT loss

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far (None before the first step)."""
        if self.done <= 0:
            return None
        return self.elapsed_s / self.done * max(0, self.total - self.done)


BuildCallback = Callable[[BuildProgress], None]


def rlvr_home() -> Path:
    return Path(os.environ.get("RLVR_HOME", Path.home() / ".cache" / "rlvr-studio"))


# Whitespace as byte-level BPE writes it (GPT-2's byte-to-unicode map): every other printable ASCII
# character is its own symbol there.
_BYTE_LEVEL_WHITESPACE = {" ": "\u0120", "\n": "\u010a"}


def char_tokenizer() -> PreTrainedTokenizerFast:
    """One token per printable ASCII character, plus <pad>=0, <eos>=1, <bos>=2, <unk>=3.

    Written as a byte-level BPE without merges (space is the symbol 'Ġ', newline 'Ċ'), the form Qwen2's
    tokenizer class rebuilds from the saved files: ``AutoTokenizer.from_pretrained`` on a Qwen2 checkpoint
    always loads that class, and a plain character vocabulary would lose every space and newline there.
    """
    vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3}
    for ch in string.digits + string.ascii_letters + string.punctuation + " \n":
        vocab.setdefault(_BYTE_LEVEL_WHITESPACE.get(ch, ch), len(vocab))
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
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
    save_tokenizer(tok, out)
    return out


# Keys transformers writes into tokenizer_config.json from how the tokenizer was loaded, not what it is
# (``local_files_only`` follows HF_HUB_OFFLINE): left out, so a build's files do not depend on the environment.
_LOAD_KEYS = ("local_files_only",)


def save_tokenizer(tok: PreTrainedTokenizerBase, out: Path | str) -> None:
    """``tok.save_pretrained(out)`` without the load-time keys in its tokenizer_config.json."""
    tok.save_pretrained(out)
    path = Path(out) / "tokenizer_config.json"
    saved = json.loads(path.read_text(encoding="utf-8"))
    if any(key in saved for key in _LOAD_KEYS):
        kept = {k: v for k, v in saved.items() if k not in _LOAD_KEYS}
        path.write_text(json.dumps(kept, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def greedy_accuracy(
    model: PreTrainedModel,
    tok: PreTrainedTokenizerBase,
    name: str = DEFAULT_MODEL,
    n: int = 200,
    seed: int = 1234,
) -> float:
    """Fraction of ``n`` held-out problems of built-in model ``name``'s task answered right, greedy decoding."""
    recipe = recipe_for(name)
    problems = recipe.held_out(n, seed)
    texts = greedy_completions(model, tok, [p for p, _ in problems], recipe.max_new_tokens)
    return sum(recipe.answer_of(t) == answer for t, (_, answer) in zip(texts, problems, strict=True)) / n


def greedy_completions(
    model: PreTrainedModel,
    tok: PreTrainedTokenizerBase,
    prompts: list[str],
    max_new_tokens: int,
    batch: int = 256,
) -> list[str]:
    """The greedy continuation of each prompt (special tokens dropped), ``batch`` prompts at a time."""
    was_training = model.training
    model.eval()
    texts: list[str] = []
    with torch.no_grad():
        for start in range(0, len(prompts), batch):
            enc = tok(prompts[start : start + batch], return_tensors="pt", padding=True, padding_side="left")
            out = model.generate(  # type: ignore[operator]
                **enc,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
            )
            texts += tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    model.train(was_training)
    return texts


def greedy_addition_accuracy(
    model: PreTrainedModel, tok: PreTrainedTokenizerBase, n: int = 200, seed: int = 1234
) -> float:
    """Fraction of random 2-digit additions the model answers exactly with greedy decoding."""
    return greedy_accuracy(model, tok, DEFAULT_MODEL, n=n, seed=seed)


def recipe_for(name: str) -> TinyRecipe:
    """The recipe of built-in model ``name``; ValueError listing the valid names."""
    if name not in RECIPES:
        raise ValueError(f"unknown built-in model {name!r}; valid: {', '.join(BUILT_IN_MODELS)}")
    return RECIPES[name]


def lr_factor(recipe: TinyRecipe, step: int, steps: int) -> float:
    """The learning-rate multiplier at ``step`` (0-based) of ``steps``: linear warm-up, then the schedule."""
    warm = min(1.0, (step + 1) / recipe.warmup_steps) if recipe.warmup_steps else 1.0
    if recipe.schedule == "constant":
        return warm
    progress = min(1.0, max(0, step - recipe.decay_start) / max(1, steps - 1 - recipe.decay_start))
    return warm * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def sft_warm_start(
    model_dir: str | Path,
    recipe: TinyRecipe,
    steps: int | None = None,
    on_progress: BuildCallback | None = None,
) -> float:
    """Supervised fine-tune the model in ``model_dir`` in place on ``recipe``'s task (loss on the reference
    completion and its end token only); returns the held-out greedy accuracy.

    A fixed number of steps (not a time budget) and seeded draws, so the result is the same on every run.
    """
    steps = recipe.sft_steps if steps is None else steps
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.train()
    rng = random.Random(recipe.seed)
    torch.manual_seed(recipe.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: lr_factor(recipe, i, steps))
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        batch = recipe.batch(rng, step, recipe.batch_size)
        enc = tok(
            [p + c + tok.eos_token for p, c in batch], return_tensors="pt", padding=True, padding_side="right"
        )
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        prompts = tok([prompt for prompt, _ in batch])["input_ids"]  # the prompt is noise: no loss on it
        for row, prompt_ids in enumerate(prompts):
            labels[row, : len(prompt_ids)] = -100
        loss = model(**enc, labels=labels).loss
        loss.backward()
        if recipe.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.clip_grad_norm)
        opt.step()
        schedule.step()
        opt.zero_grad()
        if on_progress is not None:
            on_progress(BuildProgress(recipe.name, step, steps, time.perf_counter() - t0, loss.item()))
    model.save_pretrained(model_dir)
    save_tokenizer(tok, model_dir)
    return greedy_accuracy(model, tok, recipe.name)


BUILD_PREFIX = ".build-"  # a model being built: <models>/.build-XXXX, renamed into place when done
BUILDER_FILE = "BUILDER"  # in it while it is built: "<pid> <model name>"


def builds_in_progress(exclude_pid: int | None = None) -> list[tuple[str, int]]:
    """(model name, process id) of every built-in model being built on this machine now, by any process (a
    run's first use, an evaluation, ``rlvr init-model``); a build whose process has died is left out. The
    worker warns a training run with it (workers/shared_cores.py): a build beside training shares its cores."""
    found = []
    for marker in sorted((rlvr_home() / "models").glob(f"{BUILD_PREFIX}*/{BUILDER_FILE}")):
        try:
            pid_text, _, name = marker.read_text(encoding="utf-8").strip().partition(" ")
            pid = int(pid_text)
        except (OSError, ValueError):  # finished (renamed) meanwhile, or being written
            continue
        if pid != exclude_pid and _alive(pid):
            found.append((name, pid))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one intra-op thread for the duration, then as before.

    A build runs on one thread so that every build of a recipe gives the same weights: torch's CPU kernels
    split their reductions by thread count, and the chain teacher built with one and with two threads came
    out different after 20 warm-start steps (the same thread count twice gave the same weights). The
    machine's cores, ``RLVR_TORCH_THREADS`` and the working directory then change nothing. Another processor
    still rounds differently, which is why the repository ships the weights (``shipped_weights.py``).
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def tiny_model_path(name: str = DEFAULT_MODEL) -> Path:
    """Where the cached tiny model ``name`` lives (it may not be built yet)."""
    return rlvr_home() / "models" / recipe_for(name).cache_name


def ensure_tiny_model(
    name: str = DEFAULT_MODEL,
    sft_steps: int | None = None,
    on_progress: BuildCallback | None = None,
    log: Callable[[str], None] = print,
    from_recipe: bool = False,
) -> Path:
    """Return the cached tiny model directory, placing it on first use.

    The repository ships every built-in model's weights (``shipped_weights.py``): a missing model is copied
    from there when its recipe is the shipped one and its files match their hashes, else built and
    warm-started from its recipe, as it always is with ``from_recipe``. ``sft_steps`` overrides the recipe's
    warm-start steps (for a recipe that starts from another built-in model: its steps on top of that model,
    which is placed first, with its own recipe, if missing). Written in a temporary directory and renamed
    into place, so an interrupted build never leaves a half-written model behind and two concurrent
    builders cannot corrupt each other.
    """
    recipe = recipe_for(name)
    final = tiny_model_path(name)
    if (final / "config.json").exists():
        return final
    steps = recipe.sft_steps if sft_steps is None else sft_steps
    problem = "built from its recipe on request" if from_recipe or steps != recipe.sft_steps else None
    problem = problem or shipped_problem(recipe)
    if problem is None:
        _place(final, name, lambda tmp: copy_shipped(recipe, tmp))
        log(f"{name} placed from the weights shipped with RLVR Studio in {final}")
        return final
    origin = (
        ensure_tiny_model(recipe.start_from, on_progress=on_progress, log=log, from_recipe=from_recipe)
        if recipe.start_from
        else None
    )
    t0 = time.perf_counter()
    log(f"building the built-in model {name} (once: {recipe.summary}; {problem}) in {final} ...")

    def build(tmp: Path) -> float:
        with one_thread():
            if origin is not None:  # trained on from another built-in model's weights
                shutil.copytree(origin, tmp, dirs_exist_ok=True)
            else:
                build_tiny_model(tmp, hidden=recipe.hidden, layers=recipe.layers, heads=recipe.heads)
            accuracy = sft_warm_start(tmp, recipe, steps=steps, on_progress=on_progress)
        (tmp / "WARM_START.txt").write_text(
            f"recipe={name}\nsft_steps={steps}\ngreedy_accuracy={accuracy:.3f}\n"
            f"recipe_version={recipe.version}\nbuild_seconds={time.perf_counter() - t0:.1f}\n"
        )
        return accuracy

    accuracy = _place(final, name, build)
    log(f"{name} ready in {time.perf_counter() - t0:.0f}s (greedy accuracy after warm start {accuracy:.2f})")
    return final


def _place(final: Path, name: str, fill: Callable[[Path], _T]) -> _T:
    """Run ``fill`` on a fresh temporary folder beside ``final`` (marked as a build in progress), then rename
    it into place; another process that finished first keeps its own; a failure leaves nothing behind. Returns
    what ``fill`` returned."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=BUILD_PREFIX, dir=final.parent))
    try:
        (tmp / BUILDER_FILE).write_text(f"{os.getpid()} {name}\n", encoding="utf-8")  # builds_in_progress
        filled = fill(tmp)
        (tmp / BUILDER_FILE).unlink()
        try:
            tmp.rename(final)
        except OSError:  # another process finished first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return filled


def resolve_model_path(name_or_path: str, on_progress: BuildCallback | None = None) -> str:
    """'tiny:...' -> the cached built-in model (built on demand, reporting to ``on_progress``); anything
    else is returned as is."""
    if name_or_path.startswith(TINY_PREFIX):
        return str(ensure_tiny_model(name_or_path, on_progress=on_progress))
    return name_or_path
