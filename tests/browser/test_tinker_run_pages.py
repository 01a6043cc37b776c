"""A Tinker client's training (the official SDK against the live server, a real worker) is a run in a real
browser: its page says where it came from and offers Cancel, and the token view shows a trained datum's tokens
with the advantages the client sent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
BACKGROUNDS_JS = """() => Array.from(document.querySelectorAll('#tv-tokens .tok'), (e) => {
  const m = (getComputedStyle(e).backgroundColor.match(/[\\d.]+/g) || []).map(Number);
  return m.length === 3 ? [...m, 1] : m;
})"""
tinker = pytest.importorskip("tinker")


def one_rl_step(service: Any) -> None:
    """Sample 4 answers to one prompt, give the first +1 and the rest -1/3, one importance_sampling step."""
    from tinker import types

    training = service.create_lora_training_client(base_model="tiny:addition", rank=8, seed=1).result()
    tokenizer = training.get_tokenizer()
    prompt = tokenizer.encode("21+21=")
    sampler = training.save_weights_and_get_sampling_client().result()
    params = types.SamplingParams(max_tokens=4, temperature=1.0, seed=11)
    sequences = sampler.sample(types.ModelInput.from_ints(prompt), 4, params).result().sequences
    data = []
    for i, sequence in enumerate(sequences):
        ids, pad = prompt + list(sequence.tokens), [0.0] * (len(prompt) - 1)
        advantage = 1.0 if i == 0 else -1.0 / 3
        inputs = {
            "target_tokens": ids[1:],
            "logprobs": pad + list(sequence.logprobs),
            "advantages": pad + [advantage] * len(sequence.tokens),
        }
        data.append(types.Datum(model_input=types.ModelInput.from_ints(ids[:-1]), loss_fn_inputs=inputs))  # type: ignore[arg-type]
    training.forward_backward(data, "importance_sampling").result()
    training.optim_step(types.AdamParams(learning_rate=1e-3)).result()


def test_a_tinker_run_shows_its_origin_and_its_trained_tokens(
    page: Any,
    sign_in: Callable[[str, str], Any],
    screenshot: Callable[[Any, str], Path],
    live_server_url: str,
    start_worker: Any,
) -> None:
    from tests.workers.helpers import make_project, make_user
    from tests.workers.tinker_helpers import tinker_clients

    start_worker("tinker-browser@%h")
    alice = make_user("alice")
    project = make_project(alice, "Lab")
    with tinker_clients(f"{live_server_url}/tinker") as open_client:  # open (its run live) until the end
        one_rl_step(open_client(alice, project))
        _check_the_pages(page, sign_in, screenshot, project)


def _check_the_pages(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path], project: Any
) -> None:
    from webapp.experiments.models import Rollout, Run

    run = Run.objects.get(experiment__project=project, source="tinker")
    trained = Rollout.objects.get(run=run, details__tinker__loss_fn="importance_sampling", sample_index=0)
    sign_in("alice", PASSWORD)

    page.goto(f"/runs/{run.pk}/")
    source = page.locator("#run-source").inner_text()
    assert "Tinker API" in source and "Tinker client" in source
    assert page.locator("button:has-text('Cancel run')").count() == 1

    page.goto(f"/runs/{run.pk}/rollouts/?rollout={trained.pk}")
    page.wait_for_selector(f"#tv-tokens[data-ready='1'][data-rollout='{trained.pk}']", timeout=30_000)
    assert page.locator("#tv-tokens .tok").count() == trained.length > 0
    assert page.get_attribute("#tv-tokens", "data-channel") == "advantage"
    spans = page.evaluate(BACKGROUNDS_JS)
    screenshot(page, "tinker-token-view")
    # the client's +1 on every completion token: one colour, blue (positive) on static/js/token_view.js's scale
    assert all(c == spans[0] for c in spans) and spans[0][3] > 0.2 and spans[0][2] > spans[0][0], spans
    assert page.js_errors == []
