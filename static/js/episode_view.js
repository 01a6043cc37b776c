// Episode view: a multi-turn rollout turn by turn, above its tokens. The rollout's `episode` (its turns checked
// against its tokens by webapp/pages/selectors_episodes.py) gives per turn a model span and the environment's
// reply span over the tokens; a turn shows the model's text (its span's tokens joined), its tool calls (name,
// arguments as compact JSON, a status badge, seconds, the result), the environment's reply and the turn's reward,
// under a header line: "3 turns · ended: environment said done · reward 1.0".
// Model, tool and environment text is untrusted: it only ever reaches the DOM through textContent. A text longer
// than CLIP characters shows its start and a "show all" button.
"use strict";

(function () {
  const CLIP = 600;
  const EPISODE_ENDS = { done: "environment said done", turns: "turn budget reached", length: "token budget reached" };
  const TURN_ENDS = { eos: "ended at end of sequence", stop: "ended at a stop string", length: "ended at the token limit" };
  const STATUSES = ["ok", "error", "timeout", "invalid"];

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  // 1 -> "1.0", 0.25 -> "0.25": a reward reads as a number, never as a count.
  const reward = (v) => (Number.isInteger(v) ? v.toFixed(1) : String(+v.toFixed(3)));

  // A block of untrusted text; past CLIP characters, its start and a button that shows all of it (and back).
  function textBlock(text, cls, empty) {
    const box = el("div", null, `ep-text-box ${cls}`);
    const pre = el("pre", text === "" ? empty : null, "ep-text");
    box.appendChild(pre);
    if (text === "") { pre.classList.add("ep-empty"); return box; }
    if (text.length <= CLIP) { pre.textContent = text; return box; }
    const toggle = el("button", null, "ep-more");
    toggle.type = "button";
    const show = (all) => {
      pre.textContent = all ? text : `${text.slice(0, CLIP)}…`;
      toggle.textContent = all ? "show less" : `show all (${text.length.toLocaleString("en")} characters)`;
      toggle.setAttribute("aria-expanded", String(all));
      box.dataset.clipped = all ? "0" : "1";
    };
    toggle.addEventListener("click", () => show(box.dataset.clipped === "1"));
    show(false);
    box.appendChild(toggle);
    return box;
  }

  function toolCall(call) {
    const status = STATUSES.includes(call.status) ? call.status : "invalid";
    const li = el("li", null, "ep-call");
    li.dataset.status = status;
    const head = el("div", null, "ep-call-head");
    head.appendChild(el("span", status, `ep-badge ${status}`));
    head.appendChild(el("code", call.name || "(no name)", "ep-call-name"));
    head.appendChild(el("code", call.arguments === null ? "(arguments unreadable)" : call.arguments, "ep-call-args"));
    if (call.seconds !== null) head.appendChild(el("span", `${call.seconds.toFixed(2)} s`, "ep-secs"));
    li.appendChild(head);
    li.appendChild(textBlock(call.result, "ep-result", "(empty result)"));
    return li;
  }

  function part(title, cls) {
    const box = el("div", null, `ep-part ${cls}`);
    box.appendChild(el("h4", title, "ep-part-title"));
    return box;
  }

  function turnItem(turn, k, tokens) {
    const text = (span) => tokens.slice(span[0], span[1]).join("");
    const li = el("li", null, "ep-turn");
    li.dataset.turn = String(k);
    const model = part(`Turn ${k + 1} · model`, "ep-model");
    const meta = el("p", null, "ep-meta");
    meta.appendChild(el("span", TURN_ENDS[turn.finish] || turn.finish, "ep-finish"));
    if (turn.reward !== null) meta.appendChild(el("span", `turn reward ${reward(turn.reward)}`, "ep-reward"));
    model.appendChild(meta);
    model.appendChild(textBlock(text(turn.model), "ep-model-text", "(no tokens)"));
    li.appendChild(model);
    if (turn.tool_calls.length) {
      const calls = el("ul", null, "ep-calls");
      calls.setAttribute("aria-label", `tool calls of turn ${k + 1}`);
      for (const call of turn.tool_calls) calls.appendChild(toolCall(call));
      li.appendChild(calls);
    }
    if (turn.env[1] > turn.env[0]) {  // the last turn has no reply
      const env = part(`Turn ${k + 1} · environment`, "ep-env");
      env.appendChild(textBlock(text(turn.env), "ep-env-text", ""));
      if (turn.reply_truncated) env.appendChild(el("p", "reply cut to fit the episode's token budget", "ep-note"));
      li.appendChild(env);
    }
    return li;
  }

  // Draws `detail.episode` into `root` (hidden when the rollout has none).
  function render(root, detail) {
    const ep = detail.episode;
    root.textContent = "";
    root.hidden = !ep;
    if (!ep) return;
    const head = el("p", null, "ep-head");
    root.appendChild(head);
    if (ep.error) {
      head.appendChild(el("span", ep.error, "ep-error"));
      if (ep.reason) head.appendChild(el("span", ` (${ep.reason})`, "ep-note"));
      return;
    }
    const n = ep.turns.length;
    const words = [`${n} turn${n === 1 ? "" : "s"}`, `ended: ${EPISODE_ENDS[ep.finish_reason] || ep.finish_reason}`,
      ep.reward === null ? "no reward" : `reward ${reward(ep.reward)}`];
    head.textContent = words.join(" · ");
    const list = el("ol", null, "ep-turns");
    ep.turns.forEach((turn, k) => list.appendChild(turnItem(turn, k, detail.tokens)));
    root.appendChild(list);
  }

  window.EpisodeView = { render, CLIP };
})();
