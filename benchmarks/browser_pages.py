"""Browser timings in headless chromium (not a test): the run page of a 10,000-step run with 20 metric
keys (first paint, and charts-ready when the page marks it with a ``data-charts-ready`` attribute), and
the token view of one 8k-token completion (time to interactive: every span in the DOM and coloured).

    .venv/bin/python benchmarks/browser_pages.py                       # PostgreSQL database rlvr_bench_browser
    .venv/bin/python benchmarks/browser_pages.py --repeats 5 --steps 10000 --tokens 8192

Seeds a fresh database (dropped and recreated: ``--database``), starts daphne on a free port, drives
/usr/bin/chromium with Playwright and prints a table of medians over ``--repeats`` cold page loads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip
METRIC_KEYS = [
    *(f"rollout/{k}" for k in ("reward_mean", "accuracy", "response_len_mean", "zero_std_frac")),
    *(f"reward/v{i}_mean" for i in range(4)),
    *(f"actor/{k}" for k in ("pg_loss", "kl", "entropy", "clip_frac", "grad_norm", "lr")),
    *(f"perf/{k}" for k in ("step_s", "gen_tokens_per_s", "tokens", "mem_gb")),
    "eval/demo/avg@4", "eval/demo/pass@4",
]  # fmt: skip


def recreate_database(url: str) -> None:
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def seed(steps: int, tokens: int) -> tuple[int, int]:
    """alice's run with ``steps`` x 20 metric points and one rollout of ``tokens`` tokens; (run id, rollout id)."""
    import math

    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from tests.browser.helpers import long_tokens, seed_run, store_step, token_record
    from webapp.experiments.models import MetricPoint, Run

    run = seed_run()
    Run.objects.filter(pk=run.pk).update(status="succeeded", max_steps=steps, step=steps)
    rows = [
        MetricPoint(run_id=run.pk, step=s, key=k, value=math.sin(s / 300 + i) + i + s / steps)
        for s in range(1, steps + 1)
        for i, k in enumerate(METRIC_KEYS)
    ]
    MetricPoint.objects.bulk_create(rows, batch_size=5000)
    store_step(run, steps, [token_record(steps, 0, 0, long_tokens(tokens), finish_reason="length")])
    return run.pk, run.rollouts.get().pk


def start_server(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    from webapp.stack import free_port, port_open

    port = free_port()
    log = open(Path(env["RLVR_DATA_DIR"]) / "daphne.log", "wb")  # noqa: SIM115 -- lives as long as the server
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not port_open("127.0.0.1", port):
        if time.monotonic() > deadline or process.poll() is not None:
            raise SystemExit(f"daphne did not start; see {log.name}")
        time.sleep(0.1)
    return process, f"http://127.0.0.1:{port}"


def measure_run_page(context: Any, url: str, run_id: int) -> dict[str, float | None]:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = context.new_page()
    page.goto(f"{url}/runs/{run_id}/", wait_until="load")
    fcp = page.evaluate(
        "() => { const e = performance.getEntriesByName('first-contentful-paint')[0]; return e ? e.startTime : null; }"
    )
    # A proxy any Plotly page satisfies: every metric key has a drawn chart.
    page.wait_for_function(
        f"() => document.querySelectorAll('.js-plotly-plot').length >= {len(METRIC_KEYS)}", timeout=60_000
    )
    drawn = page.evaluate("() => performance.now()")
    charts_ready: float | None = None
    try:
        page.wait_for_selector("[data-charts-ready]", state="attached", timeout=10_000)
        charts_ready = page.evaluate("() => performance.now()")
    except PlaywrightTimeout:  # the page does not mark readiness: report n/a
        charts_ready = None
    page.close()
    return {"first_paint_ms": fcp, "charts_drawn_ms": drawn, "charts_ready_ms": charts_ready}


def measure_token_view(
    context: Any, url: str, run_id: int, rollout_id: int, tokens: int
) -> dict[str, float | None]:
    page = context.new_page()
    page.add_init_script(
        "window.__longTasks = []; new PerformanceObserver(l => l.getEntries().forEach(e => "
        "window.__longTasks.push(e.duration))).observe({type: 'longtask', buffered: true});"
    )
    page.goto(f"{url}/runs/{run_id}/rollouts/?rollout={rollout_id}")
    page.wait_for_selector("#tv-tokens[data-ready='1']", timeout=60_000)
    tti = page.evaluate("() => performance.now()")
    dcl = page.evaluate("() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
    assert page.locator("#tv-tokens .tok").count() == tokens
    timing = page.evaluate("() => window.__tokenViewTiming")
    longest = page.evaluate("() => Math.max(0, ...window.__longTasks)")
    recolour = page.evaluate(
        """() => { const s = document.querySelector('#tv-channel'); const t = performance.now();
                   s.value = 'entropy'; s.dispatchEvent(new Event('change')); return performance.now() - t; }"""
    )
    hover = page.evaluate(
        """() => { const e = document.querySelector('#tv-tokens .tok[data-i="4000"]'); const t = performance.now();
                   e.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})); return performance.now() - t; }"""
    )
    page.close()
    return {"tti_ms": tti, "dcl_ms": dcl, "longest_task_ms": longest, "fetch_ms": timing["fetch_ms"], "render_ms": timing["render_ms"],
            "recolour_ms": recolour, "hover_ms": hover}  # fmt: skip


def median(values: list[float | None]) -> str:
    present = [v for v in values if v is not None]
    return f"{statistics.median(present):8.1f}" if len(present) == len(values) and present else "     n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/rlvr_bench_browser")
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="rlvr-bench-browser-"))
    env = {**os.environ, "DATABASE_URL": args.database, "RLVR_DATA_DIR": str(data_dir), "RLVR_DEBUG": "1",
           "RLVR_ENQUEUE": "0", "RLVR_SECRET_KEY": "bench-secret-key-not-for-production-use-only-here",
           "DJANGO_SETTINGS_MODULE": "webapp.settings"}  # fmt: skip
    os.environ.update(env)
    recreate_database(args.database)
    import django

    django.setup()
    t0 = time.monotonic()
    run_id, rollout_id = seed(args.steps, args.tokens)
    print(f"seeded run {run_id}: {args.steps} steps x {len(METRIC_KEYS)} keys, one {args.tokens}-token rollout "
          f"({time.monotonic() - t0:.1f} s)")  # fmt: skip

    from playwright.sync_api import sync_playwright

    server, url = start_server(env)
    results: dict[str, list[dict[str, float | None]]] = {"run": [], "tokens": []}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS
            )
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.goto(f"{url}/accounts/login/")
            page.fill("input[name=username]", "alice")
            page.fill("input[name=password]", "pw-alice-123")
            page.click("button[type=submit]")
            page.wait_for_load_state()
            page.close()
            for _ in range(args.repeats):
                results["run"].append(measure_run_page(context, url, run_id))
                results["tokens"].append(measure_token_view(context, url, run_id, rollout_id, args.tokens))
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)

    print(f"\nmedian of {args.repeats} loads (ms, headless chromium, from navigation start)")
    print(f"{'page':<34}{'measure':<24}{'ms':>8}")
    rows = [
        ("run page, 10k steps x 20 keys", "first contentful paint", [r["first_paint_ms"] for r in results["run"]]),
        ("run page, 10k steps x 20 keys", "20 Plotly charts drawn", [r["charts_drawn_ms"] for r in results["run"]]),
        ("run page, 10k steps x 20 keys", "data-charts-ready", [r["charts_ready_ms"] for r in results["run"]]),
        (f"token view, {args.tokens} tokens", "time to interactive", [r["tti_ms"] for r in results["tokens"]]),
        (f"token view, {args.tokens} tokens", "  DOMContentLoaded", [r["dcl_ms"] for r in results["tokens"]]),
        (f"token view, {args.tokens} tokens", "  API fetch", [r["fetch_ms"] for r in results["tokens"]]),
        (f"token view, {args.tokens} tokens", "  build + colour spans", [r["render_ms"] for r in results["tokens"]]),
        (f"token view, {args.tokens} tokens", "  longest main-thread task", [r["longest_task_ms"] for r in results["tokens"]]),
        (f"token view, {args.tokens} tokens", "recolour (channel switch)", [r["recolour_ms"] for r in results["tokens"]]),
        (f"token view, {args.tokens} tokens", "hover -> tooltip", [r["hover_ms"] for r in results["tokens"]]),
    ]  # fmt: skip
    for name, measure, values in rows:
        print(f"{name:<34}{measure:<24}{median(values)}")


if __name__ == "__main__":
    main()
