/* Shared helpers: fetch with the CSRF header, DOM building with textContent (never innerHTML). */
"use strict";
window.rlvr = (function () {
  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }
  async function api(url, options) {
    const opts = Object.assign({ method: "GET", headers: {}, credentials: "same-origin" }, options || {});
    opts.headers = Object.assign({ Accept: "application/json" }, opts.headers);
    if (opts.method !== "GET") opts.headers["X-CSRFToken"] = csrfToken();
    if (opts.json !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(opts.json);
    }
    const resp = await fetch(url, opts);
    let body = null;
    try { body = await resp.json(); } catch (e) { body = null; }
    return { ok: resp.ok, status: resp.status, body: body };
  }
  /* el("td", {class: "num"}, "text", child): text children become text nodes, so model text stays inert. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return node;
  }
  function pageData(id) {
    const node = document.getElementById(id || "page-data");
    return node ? JSON.parse(node.textContent) : {};
  }
  /* Seconds as "45s", "2m 5s" or "1h 3m". The value is rounded to the unit shown before it is split, so
     59.6 s reads "1m 0s" and 3599.7 s "1h 0m", never "60s", "1m 60s" or "59m 60s". */
  function formatDuration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    const minutes = Math.round(s / 60);
    return Math.floor(minutes / 60) + "h " + (minutes % 60) + "m";
  }
  /* <form data-confirm="Question?">: asks before submitting (the Content-Security-Policy forbids onsubmit=). */
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });
  return { api: api, el: el, csrfToken: csrfToken, pageData: pageData, formatDuration: formatDuration };
})();
