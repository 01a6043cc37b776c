"""A newcomer's first `make demo`, timed and photographed: ``python benchmarks/first_run.py CLONE OUT``.

Runs ``make demo`` in ``CLONE`` (a fresh clone; with an empty model cache it includes both builds), signs in
as the demo user with the printed password, and with Debian's chromium (Playwright) saves to ``OUT``: the
run page as soon as the run exists (the build phase), the run page and the rollout browser once the run
reaches ``--step``, one group's cards, and the token view of its first ``--cards`` completions coloured by
advantage, teacher gap, logprob and teacher logprob. Prints when the run appeared and when step 1 came
(seconds since ``make demo`` started), then stops the stack. ``OUT/demo.log`` keeps the stack's output.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import time
from pathlib import Path

CHANNELS = ("advantage", "teacher_gap", "logprob", "teacher_logprob")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("clone", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument(
        "--step", type=int, default=40, help="photograph the rollouts once the run reaches this step"
    )
    p.add_argument("--cards", type=int, default=4)
    p.add_argument("--timeout", type=int, default=900, help="give up after this many seconds")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log_path = args.out / "demo.log"
    started = time.time()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            ["make", "demo"], cwd=args.clone, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        return photograph(args, proc, log_path, started)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Ctrl-C to the stack's process group (as a user stops it), then SIGKILL after 20 s."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # already gone
        pass


def wait_for(pattern: str, log_path: Path, proc: subprocess.Popen[bytes], deadline: float) -> re.Match[str]:
    while time.time() < deadline:
        found = re.search(pattern, log_path.read_text(errors="replace"))
        if found:
            return found
        if proc.poll() is not None:
            raise SystemExit(f"make demo exited with {proc.returncode}; see {log_path}")
        time.sleep(1)
    raise SystemExit(f"no {pattern!r} in {log_path} before the timeout")


def photograph(
    args: argparse.Namespace, proc: subprocess.Popen[bytes], log_path: Path, started: float
) -> int:
    from playwright.sync_api import sync_playwright

    deadline = started + args.timeout
    password = wait_for(r"with password '([^']+)'", log_path, proc, deadline).group(1)
    found = wait_for(r"demo run (\d+) is training: open (\S+)/runs/", log_path, proc, deadline)
    run_id, base = found.group(1), found.group(2)
    print(f"the run appeared after {time.time() - started:.0f} s", flush=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, base_url=base)
        page.goto("/accounts/login/")
        page.fill("input[name=username]", "demo")
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        page.goto(f"/runs/{run_id}/")
        page.wait_for_timeout(4000)
        page.screenshot(path=str(args.out / "run-page-build.png"))
        first_step = None
        while time.time() < deadline:
            steps = [int(s) for s in re.findall(r"step (\d+)/\d+", log_path.read_text(errors="replace"))]
            if first_step is None and steps and steps[-1] >= 1:
                first_step = time.time() - started
                print(f"step 1 after {first_step:.0f} s", flush=True)
            if steps and steps[-1] >= args.step:
                break
            time.sleep(5)
        page.goto(f"/runs/{run_id}/")
        page.wait_for_timeout(5000)
        page.screenshot(path=str(args.out / "run-page-training.png"))
        page.goto(f"/runs/{run_id}/rollouts/")
        page.wait_for_selector("body[data-rows-ready='1']", timeout=60_000)
        page.screenshot(path=str(args.out / "rollouts.png"))
        page.locator(".rb-prompt-btn").first.click()
        page.wait_for_selector(".rb-card")
        page.locator("#rb-group").screenshot(path=str(args.out / "group-cards.png"))
        buttons = page.locator(".rb-tokens-btn")
        for i in range(min(args.cards, buttons.count())):
            buttons.nth(i).click()
            page.wait_for_selector("#tv-tokens[data-ready='1']")
            for channel in CHANNELS:
                page.select_option("#tv-channel", channel)
                page.wait_for_timeout(300)
                page.locator("#tv").screenshot(path=str(args.out / f"token-view-{i}-{channel}.png"))
            print(f"card {i}: {page.inner_text('#tv-tokens')[:120]}", flush=True)
        browser.close()
    print(f"screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
