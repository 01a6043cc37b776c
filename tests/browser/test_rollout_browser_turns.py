"""A multi-turn rollout in the rollout browser: the table says "3 turns", the token view opens with the episode turn
by turn (the model's text, its tool calls with their status, seconds and results, the environment's replies, the
per-turn rewards and a header saying how the episode ended), the environment's tokens are marked as not trained
with a legend entry, each model turn starts with a mark, and long texts are clipped behind "show all". Model, tool
and environment text stays text: markup in it never becomes an element and never runs. A single-turn rollout looks
as before, and a malformed episode says its turn data is unreadable while its tokens still render."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run, store_step, token_record
from trainer.sinks import RolloutRecord

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

HOSTILE = "<img src=x onerror=alert(1)>"
SHOTS = Path("/tmp/shots")
CALL = '<tool_call>{"name": "calc", "arguments": {"expression": "%s"}}</tool_call>'
LONG_RESULT = (
    "42\nthe digits of the work: " + "0123456789" * 70 + " " + HOSTILE
)  # past the page's 600-character clip


def chunks(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def response(result: str) -> list[str]:
    return ["\n<tool_response>\n", *chunks(result), "\n</tool_response>\n"]


# (model tokens, environment tokens) per turn: the whole trajectory is the completion's tokens, model and
# environment interleaved, as the trainer stores a multi-turn rollout.
TURNS: list[tuple[list[str], list[str]]] = [
    (
        ["Let", " me", " use", " the", " tool", ":", " ", HOSTILE, "\n", *chunks(CALL % "6*7")],
        response(LONG_RESULT),
    ),
    (
        ["Check", " it", ":", "\n", *chunks(CALL % "1/0"), "<tool_call>", "oops", "</tool_call>"],
        [*response("error: division by zero"), *response("error: the call is not valid JSON")],
    ),
    (["The", " answer", " is", " 42", "."], []),
]


def spans() -> list[tuple[tuple[int, int], tuple[int, int]]]:
    out, at = [], 0
    for model, env in TURNS:
        out.append(((at, at + len(model)), (at + len(model), at + len(model) + len(env))))
        at += len(model) + len(env)
    return out


TOKENS = [t for model, env in TURNS for t in (*model, *env)]
SPANS = spans()
ENV = [i for _, (start, end) in SPANS for i in range(start, end)]


def call(name: str, expression: str | None, result: str, status: str, seconds: float) -> dict[str, Any]:
    arguments = None if expression is None else {"expression": expression}
    return {"name": name, "arguments": arguments, "result": result, "status": status, "seconds": seconds}


def episode(**changes: Any) -> dict[str, Any]:
    calls = [
        [call("calc", "6*7", LONG_RESULT, "ok", 0.012)],
        [
            call("calc", "1/0", "error: division by zero", "error", 0.004),
            call("", None, f"error: the call is not valid JSON {HOSTILE}", "invalid", 0.0),
        ],
        [],
    ]
    rewards = [None, 0.0, 1.0]
    turns = [
        {"model_span": list(m), "env_span": list(e), "finish": "stop" if k < 2 else "eos", "reward": rewards[k],
         "tool_calls": calls[k], "reply_truncated": False, "info": {"note": HOSTILE}, "later_key": HOSTILE}
        for k, (m, e) in enumerate(SPANS)
    ]  # fmt: skip
    return {
        "turns": turns,
        "finish_reason": "done",
        "score": {"reward": 1.0, "correct": True, "detail": {}},
        **changes,
    }


def multi_turn(sample_index: int, details: dict[str, Any]) -> RolloutRecord:
    r = token_record(
        1, 0, sample_index, TOKENS, details=details, correct=True, reward=1.0,
        rewards={"calc_answer": 1.0, "tool_shaping": 0.1},
    )  # fmt: skip
    env = set(ENV)
    r.token_values["loss_mask"] = [0.0 if i in env else 1.0 for i in range(len(TOKENS))]
    r.token_values["env_token"] = [
        1.0 if i in env else 0.0 for i in range(len(TOKENS))
    ]  # stored once recorded
    return r


def open_token_view(page: Any, run_id: int, rollout_id: int) -> None:
    page.goto(f"/runs/{run_id}/rollouts/?rollout={rollout_id}")
    page.wait_for_selector(f"#tv-tokens[data-ready='1'][data-rollout='{rollout_id}']", timeout=30_000)


def texts(page: Any, selector: str) -> list[str]:
    return [t.strip() for t in page.locator(selector).all_inner_texts()]


def test_a_multi_turn_rollout_shows_turn_by_turn_with_its_environment_tokens_masked(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run()
    broken = episode()
    broken["turns"][2]["model_span"] = [SPANS[2][0][0], len(TOKENS) + 5]  # past the stored tokens
    store_step(
        run,
        1,
        [
            multi_turn(0, {"calc_answer": {"extracted": "42"}, "episode": episode()}),
            token_record(
                1, 0, 1, ["The", " answer", " is", " 41", "."], completion=f"The answer is 41 {HOSTILE}"
            ),
            multi_turn(2, {"episode": broken}),
        ],
    )
    ids = {r.sample_index: r.pk for r in run.rollouts.all()}
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sign_in("alice", PASSWORD)

    # The table: "3 turns" before a multi-turn completion, nothing before a single-turn one.
    page.goto(f"/runs/{run.pk}/rollouts/")
    page.wait_for_selector("body[data-rows-ready='1']")
    assert page.inner_text(f"#rb-table tr[data-id='{ids[0]}'] .rb-turns") == "3 turns"
    assert page.locator(f"#rb-table tr[data-id='{ids[1]}'] .rb-turns").count() == 0
    assert "tool_shaping: 0.100" in page.inner_text(f"#rb-table tr[data-id='{ids[0]}']")
    page.locator(f"#rb-table tr[data-id='{ids[0]}'] .rb-prompt-btn").click()  # its group's cards say it too
    page.wait_for_selector(f".rb-card[data-id='{ids[0]}']")
    assert page.inner_text(f".rb-card[data-id='{ids[0]}'] p.muted") == f"{len(TOKENS)} tokens · eos · 3 turns"
    assert page.inner_text(f".rb-card[data-id='{ids[1]}'] p.muted") == "5 tokens · eos"

    open_token_view(page, run.pk, ids[0])
    assert page.inner_text("#tv-episode .ep-head") == "3 turns · ended: environment said done · reward 1.0"
    assert page.locator("#tv-episode .ep-turn").count() == 3
    assert texts(page, "#tv-episode .ep-part-title") == [
        "Turn 1 · model", "Turn 1 · environment", "Turn 2 · model", "Turn 2 · environment", "Turn 3 · model",
    ]  # fmt: skip
    model_text = "".join(TURNS[0][0])
    assert (
        page.inner_text(".ep-turn[data-turn='0'] .ep-model-text .ep-text") == model_text
    )  # HOSTILE, as text
    assert page.inner_text(".ep-turn[data-turn='2'] .ep-model-text .ep-text") == "The answer is 42."

    # Tool calls: status badges, compact JSON arguments, seconds, results; per-turn rewards where there is one.
    statuses = [
        page.eval_on_selector_all(
            f".ep-turn[data-turn='{k}'] .ep-call", "cs => cs.map(c => c.dataset.status)"
        )
        for k in range(3)
    ]
    assert statuses == [["ok"], ["error", "invalid"], []]
    assert texts(page, ".ep-call .ep-badge") == ["OK", "ERROR", "INVALID"]  # drawn in capitals by CSS
    assert texts(page, ".ep-call .ep-call-args") == [
        '{"expression":"6*7"}', '{"expression":"1/0"}', "(arguments unreadable)",
    ]  # fmt: skip
    assert texts(page, ".ep-call .ep-call-name") == ["calc", "calc", "(no name)"]
    assert texts(page, ".ep-call .ep-secs") == ["0.01 s", "0.00 s", "0.00 s"]
    assert page.inner_text(".ep-turn[data-turn='1'] .ep-call[data-status='error'] .ep-result") == (
        "error: division by zero"
    )
    assert [page.locator(f".ep-turn[data-turn='{k}'] .ep-reward").all_inner_texts() for k in range(3)] == [
        [], ["turn reward 0.0"], ["turn reward 1.0"],
    ]  # fmt: skip
    assert "later_key" not in page.inner_text("#tv-episode")  # keys the page does not know: nowhere

    # Long texts: clipped, with a "show all" that shows every character (and "show less" that clips again).
    result = page.locator(".ep-turn[data-turn='0'] .ep-call .ep-result")
    assert result.get_attribute("data-clipped") == "1"
    assert result.locator(".ep-text").inner_text() == LONG_RESULT[:600] + "…"
    toggle = result.locator(".ep-more")
    assert toggle.inner_text() == f"show all ({len(LONG_RESULT):,} characters)"
    toggle.click()
    assert (
        result.locator(".ep-text").inner_text() == LONG_RESULT
        and toggle.get_attribute("aria-expanded") == "true"
    )
    assert toggle.inner_text() == "show less"
    toggle.click()
    assert result.get_attribute("data-clipped") == "1"
    env_text = "".join(TOKENS[SPANS[0][1][0] : SPANS[0][1][1]])
    assert page.locator(".ep-turn[data-turn='0'] .ep-env .ep-more").inner_text() == (
        f"show all ({len(env_text):,} characters)"
    )

    # The token view: every token once; the environment's marked, uncoloured, hatched and titled; a mark per turn.
    assert page.locator("#tv-tokens .tok").count() == len(TOKENS)
    assert page.eval_on_selector_all("#tv-tokens .tok.env", "ts => ts.map(t => +t.dataset.i)") == ENV
    env_look = page.eval_on_selector_all(
        "#tv-tokens .tok.env",
        "ts => ts.map(t => [t.title, t.style.backgroundColor, getComputedStyle(t).backgroundImage.startsWith('repeating-linear-gradient')])",
    )
    assert set(map(tuple, env_look)) == {("environment token: not trained", "", True)}
    painted = page.eval_on_selector_all(
        "#tv-tokens .tok:not(.env)", "ts => ts.filter(t => t.style.backgroundColor).length"
    )
    assert painted > len(TOKENS) - len(ENV) - 3  # the model's tokens keep their advantage colours
    assert page.inner_text("#tv-legend .tv-leg-env") == (
        f"env environment token: not trained ({len(ENV)} of {len(TOKENS)} tokens)"
    )
    marks = page.eval_on_selector_all(
        "#tv-tokens .tv-turn-mark", "ms => ms.map(m => [m.textContent, +m.nextElementSibling.dataset.i])"
    )
    assert marks == [[f"turn {k + 1}", model[0]] for k, (model, _) in enumerate(SPANS)]
    page.hover(f"#tv-tokens .tok[data-i='{ENV[0]}']")
    page.wait_for_selector(".tv-tip:not([hidden]) tr[data-key='turn']")
    assert page.inner_text(".tv-tip tr[data-key='turn'] td") == "1 of 3: environment (not trained)"
    page.hover(f"#tv-tokens .tok[data-i='{SPANS[2][0][0]}']")
    page.wait_for_selector(f"#tv-tokens[data-hovered='{SPANS[2][0][0]}']")
    assert page.inner_text(".tv-tip tr[data-key='turn'] td") == "3 of 3: model"
    page.select_option(
        "#tv-channel", "loss_mask"
    )  # another channel: the environment's tokens stay marked, uncoloured
    assert page.eval_on_selector_all("#tv-tokens .tok.env", "ts => ts.every(t => !t.style.backgroundColor)")
    assert page.locator("#tv-legend .tv-leg-env").count() == 1
    page.select_option("#tv-channel", "advantage")

    # Untrusted text: the markup in the model's text, a tool's result and the unknown keys never became an element.
    assert HOSTILE in page.inner_text(".ep-turn[data-turn='1'] .ep-call[data-status='invalid'] .ep-result")
    assert page.locator("#tv img, #rb-table img, #rb-group img").count() == 0
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)
    page.locator("#tv").screenshot(path=str(SHOTS / "rollout-browser-turns-token-view.png"))
    shutil.copy(screenshot(page, "turns"), SHOTS / "rollout-browser-turns-page.png")

    # A single-turn rollout: no episode, no environment marks, no legend entry.
    open_token_view(page, run.pk, ids[1])
    assert page.is_hidden("#tv-episode")
    assert page.locator("#tv-tokens .tok.env, #tv-tokens .tv-turn-mark, #tv-legend .tv-leg-env").count() == 0
    assert page.inner_text("#tv-tokens") == "The·answer·is·41."

    # A malformed episode: unreadable, said so; the tokens still render.
    open_token_view(page, run.pk, ids[2])
    assert page.inner_text("#tv-episode .ep-head .ep-error") == "turn data unreadable"
    assert f"outside the {len(TOKENS)} tokens" in page.inner_text("#tv-episode .ep-head")
    assert page.locator("#tv-tokens .tok").count() == len(TOKENS)

    assert dialogs == [] and page.locator("img").count() == 0
    assert page.js_errors == []
