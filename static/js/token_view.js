// Token view: one completion as its tokens, each a <span> coloured by one per-token channel on that
// channel's kind of scale (SCALES): sequential for logprobs and entropies, diverging around 0 for gaps and
// advantages, log-symmetric around 1 for the policy ratio, two colours for the loss mask.
// Model text is untrusted: it only ever reaches the DOM through textContent.
// Scales to 8k+ tokens: spans are built into a DocumentFragment in batches (one batch per animation
// frame), one delegated mouseover/focusin handler serves every token, and recolouring is one tight loop
// over a cached array of spans writing style.backgroundColor (a scale is built once per channel switch).
// Text stays readable on every background: each painted token (and legend stop) gets black or white text,
// whichever contrasts more with its colour over the white token box (WCAG 2 contrast, at least 4.5:1).
// Steps (process rewards): when the rollout carries `process` (its steps, checked against its tokens by
// webapp/pages/selectors_rollouts.py rollout_process), each step's tokens sit in one band: a bar under them
// coloured by the step's score (red 0 … green 1, grey: no score), a small tag with the step number and score,
// the score in the band's accessible label and hover title; the step the scorer blamed (its first score
// below 0.5) and the oracle's first wrong step are marked on their bands and in a legend line. The token
// colouring underneath is unchanged; a "steps" checkbox hides the bands. Steps are numbered from 1 on the page.
// Turns (multi-turn episodes): when the rollout carries `episode` (checked by webapp/pages/selectors_episodes.py)
// or an `env_token` channel, the environment's tokens are drawn dimmed and hatched, never coloured by a channel
// (they are not trained: the loss masks them) and left out of the scale; a legend entry appears only when the
// rollout has such tokens; a "turn k" mark starts each model turn.
"use strict";

(function () {
  const BATCH = 1000;
  const NEG = [178, 24, 43];    // red: below the centre, and unlikely tokens on a logprob scale
  const POS = [33, 102, 172];   // blue: above the centre
  const HOT = [204, 85, 0];     // orange: uncertain positions on an entropy scale
  const MASKED = [110, 110, 110];  // grey: tokens the loss leaves out
  const IN_LOSS = [27, 122, 47];   // green: tokens in the loss
  const FULL = 0.85;  // alpha at full strength: the darkest colours get white text (inkOn)
  // Black text on a background of relative luminance L contrasts (L + 0.05) / 0.05, white 1.05 / (L + 0.05):
  // they are equal (4.58:1) at L = 0.179, so below it white contrasts more.
  const WHITE_INK_BELOW = 0.179;
  // A flat rollout's tint, as a fraction of full strength: visibly signed, never mistaken for the scale's end.
  const FLAT_TINT = 0.3;

  // Logprob floor: one very unlikely token must not wash the rest out, so the full-colour end of the scale
  // is the rollout's 2nd-percentile logprob (its min when there are fewer than 51 tokens).
  const LOGPROB_FLOOR_PERCENTILE = 0.02;
  // float32 storage keeps ~7 significant digits: |value| ≤ 1e-6 × max(1, the largest |value|) is rounding
  // noise and stays uncoloured, and a diverging scale spans at least ±0.001, so a rollout of pure noise
  // (e.g. a gap between two copies of one logprob) is never drawn saturated.
  const NOISE_RELATIVE = 1e-6;
  const DIVERGING_MIN_SPAN = 1e-3;
  // The policy ratio is coloured by log(ratio), symmetric around 1: within 1 ± 0.001 it is uncoloured
  // (old and new logprobs agree up to float noise), and full colour is at least as far out as the PPO clip
  // range (×/÷ 1.2, i.e. ε = 0.2), so ratios inside the clip range are never shown saturated.
  const RATIO_DEAD_ZONE = 1e-3;
  const RATIO_MIN_SPAN = Math.log(1.2);

  const diff = (x, y) => (c, i) => { const a = at(c[x], i), b = at(c[y], i); return a === null || b === null ? null : a - b; };
  const raw = (name) => (c, i) => at(c[name], i);
  const logRatio = diff("logprob", "old_logprob");

  // channel name -> its label, how to compute it and which kind of scale colours it (a key of SCALES)
  const DERIVED = {
    advantage: { label: "advantage", scale: "diverging", of: raw("advantage") },
    logprob: { label: "logprob", scale: "likelihood", of: raw("logprob") },
    old_logprob: { label: "old_logprob", scale: "likelihood", of: raw("old_logprob") },
    ref_logprob: { label: "ref_logprob", scale: "likelihood", of: raw("ref_logprob") },
    teacher_logprob: { label: "teacher_logprob", scale: "likelihood", of: raw("teacher_logprob") },
    entropy: { label: "entropy", scale: "uncertainty", of: raw("entropy") },
    teacher_entropy: { label: "teacher_entropy", scale: "uncertainty", of: raw("teacher_entropy") },
    ratio: {
      label: "old/new ratio exp(logprob − old_logprob)", scale: "ratio",
      of: (c, i) => { const d = logRatio(c, i); return d === null ? null : Math.exp(d); },
    },
    ref_gap: { label: "reference/teacher gap (logprob − ref_logprob)", scale: "diverging", of: diff("logprob", "ref_logprob") },
    loss_mask: { label: "loss mask", scale: "mask", of: raw("loss_mask") },
    step_score: { label: "step score (the token's step)", scale: "probability", of: raw("step_score") },
    teacher_gap: {
      label: "teacher gap (teacher_logprob − logprob; the OPD advantage)", scale: "diverging", needs: "teacher_logprob",
      of: diff("teacher_logprob", "logprob"),
    },
  };
  const PANEL_ROWS = ["advantage", "logprob", "old_logprob", "ref_logprob", "entropy", "loss_mask", "ratio", "ref_gap"];

  // Any channel the trainer records (trainer/sinks.py TOKEN_CHANNELS) can colour the tokens, including
  // channels added after this page was written: unknown names are shown raw on the diverging scale.
  function specFor(name) {
    return DERIVED[name] || { label: name, scale: "diverging", of: raw(name) };
  }

  // Drawn otherwise, never as a colour: env_token (1 on the environment's tokens) is the hatching and the "turn" row.
  const NOT_COLOURS = ["env_token"];

  // Channels recorded for this rollout that the fixed rows do not cover, then derived ones they enable.
  function extraChannels(channels) {
    const extra = Object.keys(channels).filter((k) => channels[k] && !PANEL_ROWS.includes(k) && !NOT_COLOURS.includes(k));
    for (const [key, spec] of Object.entries(DERIVED)) {
      if (spec.needs && channels[spec.needs] && !PANEL_ROWS.includes(key) && !extra.includes(key)) extra.push(key);
    }
    return extra;
  }

  function at(arr, i) {
    if (!arr) return null;
    const v = arr[i];
    return v === null || v === undefined || !Number.isFinite(v) ? null : v;
  }

  function visible(token) {
    // Whitespace made visible; a newline keeps its line break after the ↵ (white-space: pre-wrap).
    return token.replace(/ /g, "·").replace(/\t/g, "→").replace(/\r?\n/g, "↵\n");
  }

  // CSS colour for `rgb` at strength `t` in [0, 1]; "" (no background) when the strength rounds to zero.
  function paint(rgb, t) {
    const a = FULL * Math.min(1, Math.max(0, t));
    return a < 0.0005 ? "" : `rgba(${rgb[0]},${rgb[1]},${rgb[2]},${a.toFixed(3)})`;
  }
  // The text colour for a background paint() made: white where it contrasts more than black, else black.
  const inks = new Map();
  function inkOn(bg) {
    if (!bg) return "";
    let ink = inks.get(bg);
    if (ink === undefined) {
      const [r, g, b, a] = bg.match(/[\d.]+/g).map(Number);
      const linear = (c) => { const x = (a * c + (1 - a) * 255) / 255; return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; };
      const luminance = 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);  // over the white box
      ink = luminance < WHITE_INK_BELOW ? "#fff" : "#000";
      inks.set(bg, ink);
    }
    return ink;
  }
  // The same colour as a gradient stop: "" would not parse there, so zero strength is a clear rgba.
  const stop = (rgb, t) => paint(rgb, t) || `rgba(${rgb[0]},${rgb[1]},${rgb[2]},0)`;

  // |log ratio|, finite even where exp(logprob − old_logprob) under- or overflowed to 0 or Infinity
  const logDistance = (r) => Math.abs(Math.log(Math.min(Number.MAX_VALUE, Math.max(Number.MIN_VALUE, r))));

  function percentile(values, p) {
    const known = Float64Array.from(values.filter((v) => v !== null)).sort();
    return known[Math.floor(p * (known.length - 1))];
  }

  // A scale is built once per channel switch from the rollout's values and their extremes `lo`..`hi`:
  // `colour(v)` runs in the recolour loop; the rest tells drawLegend what to print, with the bar's gradient
  // built from the same `colour`-equivalent stops (alpha is linear in the scale position everywhere).
  const SCALES = {
    // logprobs: sequential, lower = stronger red, so unlikely tokens stand out
    likelihood(values, lo, hi) {
      const floor = percentile(values, LOGPROB_FLOOR_PERCENTILE);
      const width = hi - floor;
      const clipped = floor > lo;
      return {
        kind: "sequential",
        colour: (v) => (width > 0 ? paint(NEG, (hi - v) / width) : ""),
        left: [clipped ? `≤ ${fmt(floor)}` : fmt(floor), paint(NEG, width > 0 ? 1 : 0)],
        right: [fmt(hi), ""],
        gradient: [stop(NEG, width > 0 ? 1 : 0), stop(NEG, 0)],
        note: width > 0
          ? `sequential: lower = stronger red; full colour at ${clipped ? `the 2nd-percentile floor ${fmt(floor)} and below (min ${fmt(lo)})` : `the min ${fmt(lo)}`}, none at the max ${fmt(hi)}`
          : `every token has ${fmt(hi)}: uncoloured`,
      };
    },
    // entropies (nats, ≥ 0): sequential from 0, higher = stronger orange
    uncertainty(values, lo, hi) {
      const top = Math.max(0, hi);
      return {
        kind: "sequential",
        colour: (v) => (top > 0 ? paint(HOT, v / top) : ""),
        left: ["0", ""],
        right: [fmt(top), paint(HOT, top > 0 ? 1 : 0)],
        gradient: [stop(HOT, 0), stop(HOT, top > 0 ? 1 : 0)],
        note: top > 0 ? `sequential 0 … max ${fmt(top)}: higher = stronger orange` : "every token has entropy 0: uncoloured",
      };
    },
    // advantages, gaps and unknown channels: red below 0, blue above, noise around 0 uncoloured; a flat
    // rollout (every token one value, as uniform token credit gives) gets one light tint by its sign: its
    // sign is the news (was this completion reinforced?), and full colour on every token would say nothing more
    diverging(values, lo, hi) {
      const largest = Math.max(Math.abs(lo), Math.abs(hi));
      const noise = NOISE_RELATIVE * Math.max(1, largest);
      if (hi - lo <= noise) {
        const tint = Math.abs(hi) <= noise ? "" : paint(hi < 0 ? NEG : POS, FLAT_TINT);
        const how = tint ? `one light ${hi < 0 ? "red" : "blue"} tint for its sign` : "none is coloured";
        return {
          kind: "diverging", flat: true, colour: () => tint,
          note: `flat: every token has ${fmt(hi)} (no spread between tokens), so ${how}`,
        };
      }
      const span = Math.max(largest, DIVERGING_MIN_SPAN);
      const colour = (v) => (Math.abs(v) <= noise ? "" : paint(v < 0 ? NEG : POS, Math.abs(v) / span));
      return {
        kind: "diverging",
        colour,
        left: [fmt(-span), paint(NEG, 1)],
        middle: ["0"],
        right: [fmt(span), paint(POS, 1)],
        gradient: [stop(NEG, 1), stop(NEG, 0), stop(POS, 1)],
        note: `diverging around 0: red below, blue above, full colour at ±${fmt(span)} (the largest |value|, at least ±${fmt(DIVERGING_MIN_SPAN)}); |value| ≤ ${fmt(noise)} is float noise, uncoloured`,
      };
    },
    // the policy ratio: log scale symmetric around 1, float noise uncoloured
    ratio(values, lo, hi) {
      const span = Math.max(logDistance(lo), logDistance(hi), RATIO_MIN_SPAN);
      const colour = (v) => (Math.abs(v - 1) <= RATIO_DEAD_ZONE ? "" : paint(v < 1 ? NEG : POS, logDistance(v) / span));
      return {
        kind: "ratio",
        colour,
        left: [fmt(Math.exp(-span)), paint(NEG, 1)],
        middle: ["1"],
        right: [fmt(Math.exp(span)), paint(POS, 1)],
        gradient: [stop(NEG, 1), stop(NEG, 0), stop(POS, 1)],
        note: `log scale around 1: red below, blue above, full colour at ×/÷ ${fmt(Math.exp(span))} (the furthest ratio, at least the PPO clip range ×/÷ 1.2); within 1 ± ${fmt(RATIO_DEAD_ZONE)} uncoloured`,
      };
    },
    // a step's score, a probability of the step being right: red below 0.5, blue above, full colour at 0 and 1
    probability() {
      return {
        kind: "diverging",
        colour: (v) => paint(v < 0.5 ? NEG : POS, Math.abs(v - 0.5) / 0.5),
        left: ["0", paint(NEG, 1)],
        middle: ["0.5"],
        right: ["1", paint(POS, 1)],
        gradient: [stop(NEG, 1), stop(NEG, 0), stop(POS, 1)],
        note: "a probability of the step being right: red below 0.5, blue above, full colour at 0 and 1",
      };
    },
    // loss mask: two colours, excluded (0) vs in the loss (> 0)
    mask(values) {
      const inLoss = values.filter((v) => v !== null && v > 0).length;
      const known = values.filter((v) => v !== null).length;
      return {
        kind: "categorical",
        colour: (v) => paint(v > 0 ? IN_LOSS : MASKED, v > 0 ? 0.3 : 0.6),
        swatches: [["0 excluded", paint(MASKED, 0.6)], ["1 in the loss", paint(IN_LOSS, 0.3)]],
        note: `${inLoss} of ${known} tokens in the loss`,
      };
    },
  };

  const ENV_TITLE = "environment token: not trained";

  // The environment's tokens and each model turn's first token, from the checked episode's spans (and the
  // `env_token` channel, where recorded); null for a single-turn rollout.
  function turnsOf(detail) {
    const n = detail.tokens.length;
    const turns = detail.episode && Array.isArray(detail.episode.turns) ? detail.episode.turns : [];
    const channel = detail.channels && Array.isArray(detail.channels.env_token) ? detail.channels.env_token : null;
    if (!turns.length && !channel) return null;
    const env = new Uint8Array(n), turnOf = new Int16Array(n).fill(-1), starts = new Map();
    const mark = (span, k, isEnv) => {
      for (let i = Math.max(0, span[0]); i < Math.min(n, span[1]); i++) { turnOf[i] = k; if (isEnv) env[i] = 1; }
    };
    turns.forEach((t, k) => {
      if (t.model[0] < n) starts.set(t.model[0], k);
      mark(t.model, k, false);
      mark(t.env, k, true);
    });
    if (channel) for (let i = 0; i < n; i++) if (channel[i] !== null && channel[i] > 0.5) env[i] = 1;
    const envCount = env.reduce((a, b) => a + b, 0);
    return turns.length || envCount ? { env, turnOf, starts, envCount, count: turns.length } : null;
  }

  const STEP_LOW = NEG;                 // a step's bar at score 0 ...
  const STEP_HIGH = [27, 122, 47];      // ... and at score 1, linear in between
  const STEP_NONE = "rgb(150,150,150)"; // no score for the step
  // Who blamed the step, in the words of the legend ("PRM blamed step 3"); another scorer is named as sent.
  const SCORER_LABELS = { prm: "PRM", oracle_chain: "oracle", monte_carlo: "Monte Carlo", implicit: "implicit PRM" };

  function stepColour(score) {
    if (score === null || score === undefined || !Number.isFinite(score)) return STEP_NONE;
    const t = Math.min(1, Math.max(0, score));
    const c = STEP_LOW.map((lo, j) => Math.round(lo + (STEP_HIGH[j] - lo) * t));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }
  const scoreText = (score) => (score === null || score === undefined || !Number.isFinite(score) ? "no score" : score.toFixed(3));

  // The checked `process` of a rollout, or null (no step data) or {error, reason} (unreadable). The server
  // checks it; this only guards against a shape it did not send, so the tokens always render.
  function stepsOf(detail) {
    const p = detail && detail.process;
    if (!p || typeof p !== "object") return null;
    if (p.error) return { error: String(p.error), reason: p.reason ? String(p.reason) : "" };
    const n = detail.tokens.length;
    const ok = Array.isArray(p.steps) && p.steps.every((st, k) => st && Number.isInteger(st.start) && Number.isInteger(st.end)
      && st.start < st.end && st.end <= n && (k === 0 || st.start >= p.steps[k - 1].end));
    if (!ok) return { error: "step data unreadable", reason: "" };
    const index = (k) => (Number.isInteger(k) && k >= 0 && k < p.steps.length ? k : null);
    return {
      steps: p.steps, blamed: index(p.blamed), wrong: index(p.oracle_first_wrong),
      scorer: typeof p.scorer === "string" ? p.scorer : "", segmenter: typeof p.segmenter === "string" ? p.segmenter : "",
      note: typeof p.note === "string" ? p.note : "",
    };
  }

  // The mark before a model turn's first token: a thin rule and the turn's number.
  function turnMark(k, count) {
    const m = document.createElement("span");
    m.className = "tv-turn-mark";
    m.dataset.turn = String(k);
    m.setAttribute("role", "separator");
    m.setAttribute("aria-label", `turn ${k + 1} of ${count}`);
    m.textContent = `turn ${k + 1}`;
    return m;
  }

  function fmt(v) {
    if (v === null) return "—";
    return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(4) : String(+v.toFixed(6));
  }

  class TokenView {
    constructor({ tokens, legend, panel, select, stepsLegend, stepsToggle }) {
      this.el = tokens;
      this.legend = legend;
      this.panel = panel;
      this.select = select;
      this.stepsLegend = stepsLegend || null;  // the legend line of the steps (optional)
      this.stepsToggle = stepsToggle || null;  // the "steps" checkbox (optional)
      this.process = null;
      this.stepOf = null;  // token index -> step index (-1: in no step), when the rollout has steps
      this.turns = null;  // turnsOf(detail): environment tokens and turn starts of a multi-turn rollout
      this.spans = [];
      this.detail = null;
      this.values = [];
      this.renderId = 0;
      this.tip = document.createElement("div");
      this.tip.className = "tv-tip";
      this.tip.hidden = true;
      this.tip.setAttribute("role", "tooltip");
      document.body.appendChild(this.tip);
      const show = (ev) => {
        const span = ev.target.closest ? ev.target.closest(".tok") : null;
        if (span && this.el.contains(span)) this.showToken(+span.dataset.i, span);
      };
      this.el.addEventListener("mouseover", show);
      this.el.addEventListener("focusin", show);
      this.el.addEventListener("mouseleave", () => { this.tip.hidden = true; });
      this.el.addEventListener("focusout", () => { this.tip.hidden = true; });
      if (select) select.addEventListener("change", () => this.setChannel(select.value));
      if (this.stepsToggle) this.stepsToggle.addEventListener("change", () => this.showSteps(this.stepsToggle.checked));
    }

    showSteps(on) {
      this.el.classList.toggle("tv-steps-off", !on);
      this.el.dataset.steps = this.process && this.process.steps ? (on ? "shown" : "hidden") : "none";
    }

    scorerLabel() {
      const name = this.process.scorer;
      return SCORER_LABELS[name] || name || "the scorer";
    }

    // A band holding step k's tokens: the bar (CSS border, coloured by the score), its tag and labels.
    stepBand(k) {
      const p = this.process;
      const st = p.steps[k];
      const band = document.createElement("span");
      band.className = "tv-step";
      band.dataset.step = String(k);
      if (st.score !== null && st.score !== undefined) band.dataset.score = String(st.score);
      band.style.setProperty("--band", stepColour(st.score));
      const marks = [];
      if (k === p.blamed) { band.classList.add("blamed"); marks.push(`${this.scorerLabel()} blamed this step`); }
      if (k === p.wrong) { band.classList.add("wrong"); marks.push("really wrong: the oracle's first wrong step"); }
      const label = `step ${k + 1} of ${p.steps.length}: score ${scoreText(st.score)}${p.scorer ? ` (${p.scorer})` : ""}${marks.length ? "; " + marks.join("; ") : ""}`;
      band.setAttribute("role", "group");
      band.setAttribute("aria-label", label);
      band.title = label;
      const tag = document.createElement("span");
      tag.className = "tv-step-tag";
      tag.setAttribute("aria-hidden", "true");
      tag.textContent = `step ${k + 1}: ${Number.isFinite(st.score) ? st.score.toFixed(2) : "no score"}`;
      if (k === p.blamed) {
        const m = document.createElement("span");
        m.className = "tv-step-mark blamed";
        m.textContent = `${this.scorerLabel()} blamed`;
        tag.appendChild(m);
      }
      if (k === p.wrong) {
        const m = document.createElement("span");
        m.className = "tv-step-mark wrong";
        m.textContent = "really wrong";
        tag.appendChild(m);
      }
      band.appendChild(tag);
      return band;
    }

    // The legend line above the tokens: how many steps, what the bar means, who blamed which step.
    drawStepsLegend() {
      const L = this.stepsLegend;
      const p = this.process;
      if (this.stepsToggle) {
        const label = this.stepsToggle.closest("label");
        if (label) label.hidden = !(p && p.steps);
      }
      if (!L) return;
      L.textContent = "";
      L.hidden = !p;
      if (!p) return;
      const item = (cls, text) => {
        const e = document.createElement("span");
        e.className = cls;
        e.textContent = text;
        L.appendChild(e);
        return e;
      };
      if (p.error) {
        item("tv-steps-error", p.error);
        if (p.reason) item("tv-steps-note", `(${p.reason})`);
        return;
      }
      const by = [p.scorer && `scored by ${p.scorer}`, p.segmenter && `cut by ${p.segmenter}`].filter(Boolean).join(", ");
      item("tv-steps-label", `${p.steps.length} step${p.steps.length === 1 ? "" : "s"}${by ? ` (${by})` : ""}:`);
      const blamed = item("tv-steps-blamed", p.blamed === null ? `${this.scorerLabel()} blamed no step` : `${this.scorerLabel()} blamed step ${p.blamed + 1}`);
      blamed.dataset.step = p.blamed === null ? "" : String(p.blamed);
      if (p.wrong !== null) item("tv-steps-wrong", `really wrong: step ${p.wrong + 1}`).dataset.step = String(p.wrong);
      if (p.note) item("tv-steps-scorer-note", `${p.scorer || "scorer"}: ${p.note}`);
      item("tv-steps-note", "bar under each step: its score, red 0 … green 1, grey no score; blamed: the first step scored below 0.5");
    }

    // Renders `detail` (GET /api/runs/<id>/rollouts/<rid>/); resolves once every span is in the DOM.
    render(detail) {
      const id = ++this.renderId;
      this.detail = detail;
      this.spans = new Array(detail.tokens.length);
      this.process = stepsOf(detail);
      this.turns = turnsOf(detail);
      const turns = this.turns;
      const steps = this.process && this.process.steps ? this.process.steps : [];
      this.stepOf = steps.length ? new Int32Array(detail.tokens.length).fill(-1) : null;
      this.drawStepsLegend();
      this.showSteps(this.stepsToggle ? this.stepsToggle.checked : true);
      this.el.textContent = "";
      this.el.dataset.ready = "0";
      this.el.setAttribute("aria-busy", "true");
      const tokens = detail.tokens;
      return new Promise((resolve) => {
        let start = 0;
        let k = 0, band = null;  // the next step, and the band tokens go into now (null: straight into the view)
        const step = () => {
          if (id !== this.renderId) return resolve(false);  // superseded by a newer render
          const frag = document.createDocumentFragment();
          const end = Math.min(tokens.length, start + BATCH);
          for (let i = start; i < end; i++) {
            if (band && i >= steps[k - 1].end) band = null;
            if (k < steps.length && i === steps[k].start) { band = this.stepBand(k); frag.appendChild(band); k++; }
            if (band) this.stepOf[i] = k - 1;
            if (turns && turns.starts.has(i)) (band || frag).appendChild(turnMark(turns.starts.get(i), turns.count));
            const s = document.createElement("span");
            s.className = turns && turns.env[i] ? "tok env" : "tok";
            if (turns && turns.env[i]) s.title = ENV_TITLE;
            s.tabIndex = 0;
            s.dataset.i = i;
            s.textContent = visible(tokens[i]);
            (band || frag).appendChild(s);
            this.spans[i] = s;
          }
          this.el.appendChild(frag);
          start = end;
          if (start < tokens.length) { requestAnimationFrame(step); return; }
          this.addChannelOptions(detail.channels || {});
          this.setChannel(this.select ? this.select.value : "advantage");
          this.el.dataset.tokens = String(tokens.length);
          this.el.dataset.ready = "1";
          this.el.removeAttribute("aria-busy");
          resolve(true);
        };
        step();
      });
    }

    addChannelOptions(channels) {
      if (!this.select) return;
      const have = new Set(Array.from(this.select.options, (o) => o.value));
      for (const name of extraChannels(channels)) {
        if (have.has(name)) continue;
        const option = document.createElement("option");
        option.value = name;
        option.textContent = specFor(name).label;
        this.select.appendChild(option);
      }
    }

    setChannel(name) {
      const spec = specFor(name);
      const c = this.detail ? this.detail.channels : {};
      const n = this.spans.length;
      const values = new Array(n);
      const env = this.turns ? this.turns.env : null;
      const scaled = new Array(n);  // what the scale is built from: the model's tokens only
      let lo = Infinity, hi = -Infinity;
      for (let i = 0; i < n; i++) {
        const v = spec.of(c, i);
        values[i] = v;
        scaled[i] = env && env[i] ? null : v;
        if (scaled[i] !== null) { if (v < lo) lo = v; if (v > hi) hi = v; }
      }
      const missing = lo === Infinity;
      const scale = missing ? null : SCALES[spec.scale](scaled, lo, hi);
      const colour = scale ? scale.colour : () => "";
      for (let i = 0; i < n; i++) {
        const s = this.spans[i];
        const v = scaled[i];
        if (env && env[i]) { s.style.backgroundColor = ""; s.style.color = ""; s.classList.remove("na"); continue; }
        const bg = v === null ? "" : colour(v);
        s.style.backgroundColor = bg;
        s.style.color = inkOn(bg);
        if (v === null) s.classList.add("na"); else s.classList.remove("na");
      }
      this.values = values;
      this.channel = name;
      this.el.dataset.channel = name;
      this.el.dataset.scale = scale ? scale.kind : "";
      this.el.dataset.flat = scale && scale.flat ? "1" : "0";
      this.drawLegend(spec, scale, lo, hi);
      this.drawEnvLegend();
    }

    // Shown only when the rollout has environment tokens: what their hatching means.
    drawEnvLegend() {
      if (!this.legend || !this.turns || !this.turns.envCount) return;
      const e = document.createElement("span");
      e.className = "tv-leg-env";
      const swatch = document.createElement("span");
      swatch.className = "tv-leg-env-swatch";
      swatch.textContent = "env";
      e.append(swatch, ` ${ENV_TITLE} (${this.turns.envCount} of ${this.spans.length} tokens)`);
      this.legend.appendChild(e);
    }

    // The legend prints what the scale does: its ends (with their colours), the gradient between them,
    // the centre where there is one, the rule in words, and the rollout's own min and max.
    drawLegend(spec, scale, lo, hi) {
      const L = this.legend;
      if (!L) return;
      L.textContent = "";
      L.dataset.scale = scale ? scale.kind : "";
      L.dataset.flat = scale && scale.flat ? "1" : "0";
      if (!scale) {
        L.textContent = `${spec.label}: not recorded for this rollout`;
        return;
      }
      const item = (cls, text, bg) => {
        const e = document.createElement("span");
        e.className = cls;
        if (bg) { e.style.backgroundColor = bg; e.style.color = inkOn(bg); }
        e.textContent = text;
        L.appendChild(e);
        return e;
      };
      if (scale.flat) {  // nothing to draw a scale for: the sentence alone
        item("tv-leg-note", `${spec.label} is ${scale.note}; hatched: no value`);
        return;
      }
      item("tv-leg-label", `${spec.label}:`);
      if (scale.swatches) {
        for (const [text, bg] of scale.swatches) item("tv-leg-stop", text, bg);
      } else {
        item("tv-leg-stop", scale.left[0], scale.left[1]);
        const bar = item("tv-leg-bar", "");
        bar.style.background = `linear-gradient(to right, ${scale.gradient.join(", ")})`;
        if (scale.middle) {  // the centre value, printed on the bar's clear midpoint
          const centre = document.createElement("span");
          centre.className = "tv-leg-centre";
          centre.textContent = scale.middle[0];
          bar.appendChild(centre);
        }
        item("tv-leg-stop", scale.right[0], scale.right[1]);
      }
      item("tv-leg-note", `(${scale.note}; this rollout: min ${fmt(lo)}, max ${fmt(hi)}; hatched: no value)`);
    }

    rowsFor(i) {
      const d = this.detail;
      const c = d.channels;
      const rows = [["index", String(i), i], ["token id", String(d.token_ids[i]), d.token_ids[i]], ["text", JSON.stringify(d.tokens[i]), null]];
      if (this.turns && this.turns.count) {
        const k = this.turns.turnOf[i];
        rows.push(["turn", k < 0 ? "—" : `${k + 1} of ${this.turns.count}: ${this.turns.env[i] ? "environment (not trained)" : "model"}`, k < 0 ? null : k]);
      } else if (this.turns && this.turns.env[i]) {
        rows.push(["turn", "environment (not trained)", null]);
      }
      if (this.stepOf) {
        const k = this.stepOf[i];
        const score = k < 0 ? null : this.process.steps[k].score;
        rows.push(["step", k < 0 ? "—" : `${k + 1} of ${this.process.steps.length}: score ${scoreText(score)}`, k < 0 ? null : k]);
      }
      for (const key of [...PANEL_ROWS, ...extraChannels(c)]) {
        const v = specFor(key).of(c, i);
        rows.push([key, fmt(v), v]);
      }
      return rows;
    }

    showToken(i, span) {
      if (!this.detail || !(i >= 0)) return;
      const rows = this.rowsFor(i);
      for (const target of [this.tip, this.panel]) {
        if (!target) continue;
        target.textContent = "";
        const table = document.createElement("table");
        for (const [key, text, raw] of rows) {
          const tr = document.createElement("tr");
          tr.dataset.key = key;
          if (typeof raw === "number") tr.dataset.value = String(raw);
          if (key === this.channel) tr.className = "current";
          const th = document.createElement("th");
          th.textContent = key;
          const td = document.createElement("td");
          td.textContent = text;
          tr.append(th, td);
          table.appendChild(tr);
        }
        target.appendChild(table);
      }
      const r = span.getBoundingClientRect();
      this.tip.hidden = false;
      this.tip.style.left = `${Math.min(window.scrollX + r.left, window.scrollX + document.documentElement.clientWidth - 260)}px`;
      this.tip.style.top = `${window.scrollY + r.bottom + 4}px`;
      this.el.dataset.hovered = String(i);
    }
  }

  window.TokenView = TokenView;
  window.TokenView.visible = visible;
})();
