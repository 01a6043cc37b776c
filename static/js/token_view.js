// Token view: one completion as its tokens, each a <span> coloured on a diverging scale by one channel.
// Model text is untrusted: it only ever reaches the DOM through textContent.
// Scales to 8k+ tokens: spans are built into a DocumentFragment in batches (one batch per animation
// frame), one delegated mouseover/focusin handler serves every token, and recolouring is one tight loop
// over a cached array of spans writing style.backgroundColor.
"use strict";

(function () {
  const BATCH = 1000;
  const NEG = [178, 24, 43];   // red: below the centre
  const POS = [33, 102, 172];  // blue: above the centre

  // channel name -> how to compute it and where its scale is centred
  const DERIVED = {
    advantage: { label: "advantage", centre: 0, of: (c, i) => at(c.advantage, i) },
    logprob: { label: "logprob", centre: 0, of: (c, i) => at(c.logprob, i) },
    entropy: { label: "entropy", centre: 0, of: (c, i) => at(c.entropy, i) },
    ratio: {
      label: "old/new ratio exp(logprob − old_logprob)", centre: 1,
      of: (c, i) => { const a = at(c.logprob, i), b = at(c.old_logprob, i); return a === null || b === null ? null : Math.exp(a - b); },
    },
    ref_gap: {
      label: "reference/teacher gap (logprob − ref_logprob)", centre: 0,
      of: (c, i) => { const a = at(c.logprob, i), b = at(c.ref_logprob, i); return a === null || b === null ? null : a - b; },
    },
    loss_mask: { label: "loss mask", centre: 0, of: (c, i) => at(c.loss_mask, i) },
    teacher_gap: {
      label: "teacher gap (teacher_logprob − logprob; the OPD advantage)", centre: 0, needs: "teacher_logprob",
      of: (c, i) => { const a = at(c.teacher_logprob, i), b = at(c.logprob, i); return a === null || b === null ? null : a - b; },
    },
  };
  const PANEL_ROWS = ["advantage", "logprob", "old_logprob", "ref_logprob", "entropy", "loss_mask", "ratio", "ref_gap"];

  // Any channel the trainer records (trainer/sinks.py TOKEN_CHANNELS) can colour the tokens, including
  // channels added after this page was written: unknown names are shown raw, centred at 0.
  function specFor(name) {
    return DERIVED[name] || { label: name, centre: 0, of: (c, i) => at(c[name], i) };
  }

  // Channels recorded for this rollout that the fixed rows do not cover, then derived ones they enable.
  function extraChannels(channels) {
    const extra = Object.keys(channels).filter((k) => channels[k] && !PANEL_ROWS.includes(k));
    for (const [key, spec] of Object.entries(DERIVED)) {
      if (spec.needs && channels[spec.needs] && !PANEL_ROWS.includes(key)) extra.push(key);
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

  function colour(v, centre, span) {
    if (v === null) return "";
    const d = v - centre;
    const a = span > 0 ? Math.min(1, Math.abs(d) / span) : 0;
    const c = d < 0 ? NEG : POS;
    return `rgba(${c[0]},${c[1]},${c[2]},${(0.85 * a).toFixed(3)})`;
  }

  function fmt(v) {
    if (v === null) return "—";
    return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(4) : String(+v.toFixed(6));
  }

  class TokenView {
    constructor({ tokens, legend, panel, select }) {
      this.el = tokens;
      this.legend = legend;
      this.panel = panel;
      this.select = select;
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
    }

    // Renders `detail` (GET /api/runs/<id>/rollouts/<rid>/); resolves once every span is in the DOM.
    render(detail) {
      const id = ++this.renderId;
      this.detail = detail;
      this.spans = new Array(detail.tokens.length);
      this.el.textContent = "";
      this.el.dataset.ready = "0";
      this.el.setAttribute("aria-busy", "true");
      const tokens = detail.tokens;
      return new Promise((resolve) => {
        let start = 0;
        const step = () => {
          if (id !== this.renderId) return resolve(false);  // superseded by a newer render
          const frag = document.createDocumentFragment();
          const end = Math.min(tokens.length, start + BATCH);
          for (let i = start; i < end; i++) {
            const s = document.createElement("span");
            s.className = "tok";
            s.tabIndex = 0;
            s.dataset.i = i;
            s.textContent = visible(tokens[i]);
            frag.appendChild(s);
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
      let lo = Infinity, hi = -Infinity;
      for (let i = 0; i < n; i++) {
        const v = spec.of(c, i);
        values[i] = v;
        if (v !== null) { if (v < lo) lo = v; if (v > hi) hi = v; }
      }
      const missing = lo === Infinity;
      const span = missing ? 0 : Math.max(Math.abs(lo - spec.centre), Math.abs(hi - spec.centre));
      for (let i = 0; i < n; i++) {
        const s = this.spans[i];
        const v = values[i];
        s.style.backgroundColor = colour(v, spec.centre, span);
        if (v === null) s.classList.add("na"); else s.classList.remove("na");
      }
      this.values = values;
      this.channel = name;
      this.el.dataset.channel = name;
      this.drawLegend(spec, missing ? null : lo, missing ? null : hi, span);
    }

    drawLegend(spec, lo, hi, span) {
      const L = this.legend;
      if (!L) return;
      L.textContent = "";
      if (lo === null) {
        L.textContent = `${spec.label}: not recorded for this rollout`;
        return;
      }
      const item = (cls, text, bg) => {
        const e = document.createElement("span");
        e.className = cls;
        if (bg) e.style.backgroundColor = bg;
        e.textContent = text;
        L.appendChild(e);
      };
      item("tv-leg-label", `${spec.label}:`);
      item("tv-leg-stop", `min ${fmt(lo)}`, colour(lo, spec.centre, span));
      const bar = document.createElement("span");
      bar.className = "tv-leg-bar";
      bar.style.background = `linear-gradient(to right, ${colour(spec.centre - span, spec.centre, span)}, transparent, ${colour(spec.centre + span, spec.centre, span)})`;
      L.appendChild(bar);
      item("tv-leg-stop", `${fmt(spec.centre)}`, "transparent");
      item("tv-leg-stop", `max ${fmt(hi)}`, colour(hi, spec.centre, span));
      item("tv-leg-note", `(scale ±${fmt(span)} around ${fmt(spec.centre)}; grey: no value)`);
    }

    rowsFor(i) {
      const d = this.detail;
      const c = d.channels;
      const rows = [["index", String(i), i], ["token id", String(d.token_ids[i]), d.token_ids[i]], ["text", JSON.stringify(d.tokens[i]), null]];
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
