"""``rlvr login | logout | runs | launch | tail``: a terminal client for a running RLVR Studio server.

Talks HTTP (httpx) and websockets only: importing this module loads neither Django nor torch, so it runs
from any machine with the package installed. ``login`` stores the server URL and an API token in
``~/.config/rlvr-studio/credentials.json`` (mode 0600; ``$XDG_CONFIG_HOME`` is honoured); the server
keeps only a digest of that token, which expires (``RLVR_API_TOKEN_DAYS``) and ``logout`` revokes.
``tail`` listens on the run's websocket and falls back to polling ``/api/runs/<id>/metrics/?since_step=``
when it cannot.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import math
import os
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

FINISHED = frozenset({"succeeded", "failed", "cancelled"})
# `tail` also stops on a run the task queue refused: it will not move until someone queues it again.
STOPPED = FINISHED | {"not_queued"}
# The metrics `tail` prints for each step, in this order, when the run reports them.
TAIL_KEYS = (
    "rollout/reward_mean",
    "rollout/accuracy",
    "actor/pg_loss",
    "actor/kl",
    "rollout/response_len_mean",
    "perf/step_s",
)
POLL_INTERVAL_S = 2.0


class ClientError(Exception):
    """A problem the user can fix (not logged in, server unreachable, bad input); printed as it is."""


# --- credentials -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Credentials:
    url: str
    token: str
    username: str


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rlvr-studio"


def credentials_path() -> Path:
    return config_dir() / "credentials.json"


def save_credentials(creds: Credentials, path: Path | None = None) -> Path:
    """Write the credentials readable by their owner only (0600), in a 0700 directory."""
    path = path or credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"url": creds.url, "token": creds.token, "username": creds.username}, fh, indent=2)
    path.chmod(0o600)  # O_CREAT's mode does not apply to a file that already existed
    return path


def load_credentials(path: Path | None = None) -> Credentials:
    path = path or credentials_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Credentials(
            url=str(data["url"]), token=str(data["token"]), username=str(data.get("username", ""))
        )
    except FileNotFoundError:
        raise ClientError(
            "not logged in: run `rlvr login --url http://HOST:8000 --username NAME` first"
        ) from None
    except (ValueError, KeyError, TypeError):
        raise ClientError(f"{path} is damaged: run `rlvr login` again") from None


def normalize_url(url: str) -> str:
    """``localhost:8000`` -> ``http://localhost:8000``; no trailing slash."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ClientError(f"{url!r} is not a server URL: use e.g. http://localhost:8000")
    return url


def websocket_url(base_url: str, run_id: int, token: str) -> str:
    """The run's websocket: ws:// for http, wss:// for https, with the token in the query string."""
    parts = urlsplit(base_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    path = parts.path.rstrip("/") + f"/ws/runs/{run_id}/"
    return urlunsplit((scheme, parts.netloc, path, f"token={quote(token, safe='')}", ""))


# --- HTTP ------------------------------------------------------------------------------------------


def error_message(response: httpx.Response) -> str:
    """The API's one error shape ``{"message", "extra": {"fields": {path: [messages]}}}`` as text."""
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:200]}"
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}: {body}"
    message = str(body.get("message") or body.get("detail") or f"HTTP {response.status_code}")
    fields = (body.get("extra") or {}).get("fields") or {}
    lines = [message] + [f"  {path}: {' '.join(map(str, msgs))}" for path, msgs in fields.items()]
    return "\n".join(lines)


class Api:
    """A thin wrapper over the REST API; every method returns decoded JSON or raises ClientError."""

    def __init__(
        self, url: str, token: str | None = None, transport: httpx.BaseTransport | None = None
    ) -> None:
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Token {token}"
        self.url = normalize_url(url)
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=30.0, transport=transport)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as err:
            raise ClientError(f"cannot reach {self.url}: {err}") from None
        if response.status_code == 401:
            raise ClientError(
                f"{self.url} refused the credentials: run `rlvr login` again\n{error_message(response)}"
            )
        if response.status_code >= 400:
            raise ClientError(error_message(response))
        return response.json() if response.content else None

    def get_all(self, path: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every item of a list endpoint, following ``next`` links of paginated answers."""
        data = self.request("GET", path, params=params)
        if isinstance(data, list):
            return data
        items = list(data.get("results", []))
        while data.get("next"):
            data = self.request("GET", data["next"])
            items.extend(data.get("results", []))
        return items

    def issue_token(self, username: str, password: str, name: str = "") -> dict[str, Any]:
        """A new token (``token``, ``expires_at``, ...): the server shows it this once and keeps a digest."""
        body = {"username": username, "password": password, "name": name}
        data: dict[str, Any] = self.request("POST", "/api/auth/token/", json=body)
        return data

    def login(self, username: str, password: str) -> str:
        return str(self.issue_token(username, password)["token"])

    def revoke_current_token(self) -> None:
        self.request("DELETE", "/api/tokens/current/")

    def projects(self) -> list[dict[str, Any]]:
        return self.get_all("/api/projects/")

    def project_id(self, project: str) -> int:
        """A project given by id, slug or name."""
        projects = self.projects()
        for p in projects:
            if project in (str(p.get("id")), p.get("slug"), p.get("name")):
                return int(p["id"])
        known = ", ".join(str(p.get("slug")) for p in projects) or "none"
        raise ClientError(f"no project {project!r} among yours (you belong to: {known})")

    def runs(self, project_id: int | None = None) -> list[dict[str, Any]]:
        return self.get_all("/api/runs/" if project_id is None else f"/api/projects/{project_id}/runs/")

    def run(self, run_id: int) -> dict[str, Any]:
        data: dict[str, Any] = self.request("GET", f"/api/runs/{run_id}/")
        return data

    def create_experiment(
        self, project_id: int, name: str, config: dict[str, Any], description: str
    ) -> dict[str, Any]:
        body = {"name": name, "description": description, "config": config}
        data: dict[str, Any] = self.request("POST", f"/api/projects/{project_id}/experiments/", json=body)
        return data

    def launch(self, experiment_id: int) -> dict[str, Any]:
        data: dict[str, Any] = self.request("POST", f"/api/experiments/{experiment_id}/runs/")
        return data

    def metrics(self, run_id: int, since_step: int) -> dict[str, dict[str, list[Any]]]:
        """``{key: {"step": [...], "value": [...], "min": [...], "max": [...]}}``, as the API sends it."""
        data = self.request("GET", f"/api/runs/{run_id}/metrics/", params={"since_step": since_step})
        series = data.get("metrics", data) if isinstance(data, dict) else {}
        return {str(k): v for k, v in series.items() if isinstance(v, dict)}


# --- formatting ------------------------------------------------------------------------------------


def format_value(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def format_step_line(step: int, max_steps: int, metrics: dict[str, Any]) -> str:
    """``step   5/12  reward_mean 0.25  accuracy 0.125 ...``: the TAIL_KEYS the step reports."""
    width = len(str(max_steps or step))
    parts = [f"step {step:>{width}}/{max_steps or '?'}"]
    for key in TAIL_KEYS:
        if key in metrics:
            parts.append(f"{key.split('/', 1)[1]} {format_value(metrics[key])}")
    return "  ".join(parts)


def steps_from_series(series: dict[str, dict[str, list[Any]]]) -> dict[int, dict[str, Any]]:
    """Turn ``{key: {"step": [...], "value": [...]}}`` into ``{step: {key: value}}``."""
    steps: dict[int, dict[str, Any]] = {}
    for key, columns in series.items():
        for step, value in zip(columns.get("step", []), columns.get("value", []), strict=True):
            steps.setdefault(int(step), {})[key] = value
    return steps


def format_runs_table(runs: Sequence[dict[str, Any]], project_names: dict[int, str] | None = None) -> str:
    """One row per run: id, status, progress, project, experiment, creation time."""
    if not runs:
        return "no runs"
    names = project_names or {}
    rows = [("ID", "STATUS", "STEP", "PROJECT", "EXPERIMENT", "CREATED")]
    for r in runs:
        project = r.get("project")
        rows.append(
            (
                str(r.get("id", "")),
                str(r.get("status", "")),
                f"{r.get('step', 0)}/{r.get('max_steps', '?')}",
                names.get(int(project), str(project)) if project is not None else "",
                str(r.get("experiment_name") or r.get("experiment") or ""),
                str(r.get("created_at", ""))[:19].replace("T", " "),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def load_experiment_file(path: str) -> dict[str, Any]:
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ClientError(f"{p} does not exist")
    text = p.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise ClientError(f"{p} is not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {err}") from None
    if not isinstance(data, dict):
        raise ClientError(f"{p}: the top level must be a mapping of config sections")
    return data


# --- tail ------------------------------------------------------------------------------------------


class Tail:
    """Prints each step of a run once, in order, whichever way it arrives (websocket or REST)."""

    def __init__(self, api: Api, run_id: int, out: IO[str]) -> None:
        self.api, self.run_id, self.out = api, run_id, out
        self.last_step = 0
        self.max_steps = 0
        self.status = ""

    def emit(self, step: int, metrics: dict[str, Any]) -> None:
        if step <= self.last_step:
            return
        self.last_step = step
        print(format_step_line(step, self.max_steps, metrics), file=self.out, flush=True)

    def catch_up(self) -> None:
        for step, metrics in sorted(steps_from_series(self.api.metrics(self.run_id, self.last_step)).items()):
            self.emit(step, metrics)

    def refresh_status(self) -> None:
        run = self.api.run(self.run_id)
        self.status, self.max_steps = str(run.get("status", "")), int(run.get("max_steps") or 0)

    def finish(self) -> int:
        run = self.api.run(self.run_id)
        self.status = str(run.get("status", self.status))
        line = f"run {self.run_id} {self.status} at step {run.get('step', self.last_step)}"
        if run.get("error_message"):
            line += f": {run['error_message']}"
        dropped = int(run.get("rollouts_dropped") or 0)
        if dropped:  # an outside run's client could not deliver some: never a silent success
            line += f" ({dropped} rollout{'s' if dropped != 1 else ''} could not be delivered)"
        print(line, file=self.out, flush=True)
        return 0 if self.status == "succeeded" else 1

    async def via_websocket(self, url: str) -> bool:
        """Follow the run's events; True once it finished, False if the connection could not be kept."""
        import websockets
        from websockets.typing import Origin

        try:
            # The server checks Origin against its allowed hosts (websocket hijacking guard): we are it.
            ws = await websockets.connect(url, open_timeout=10, origin=Origin(self.api.url))
        except (OSError, websockets.InvalidHandshake, TimeoutError):
            return False
        async with ws:
            while True:
                try:
                    raw = await ws.recv()
                except websockets.ConnectionClosed as closed:
                    code = closed.rcvd.code if closed.rcvd else None
                    if code == 4401:
                        raise ClientError("the server refused the token: run `rlvr login` again") from None
                    if code == 4404:
                        raise ClientError(f"no run {self.run_id} in your projects") from None
                    return False
                if self.handle(json.loads(raw)):
                    return True

    def handle(self, event: dict[str, Any]) -> bool:
        """Apply one websocket event; True when the run has finished."""
        kind = event.get("type")
        if kind == "run.hello":
            self.status, self.max_steps = str(event.get("status", "")), int(event.get("max_steps") or 0)
            self.catch_up()
        elif kind == "run.step":
            self.max_steps = int(event.get("max_steps") or self.max_steps)
            step = int(event["step"])
            if step > self.last_step + 1:  # missed some (reconnected): fetch the gap first
                self.catch_up()
            self.emit(step, event.get("metrics") or {})
        elif kind == "run.status":
            self.status = str(event.get("status", self.status))
        return self.status in STOPPED

    def via_polling(self, sleep: Callable[[float], None] = time.sleep) -> None:
        while True:
            self.refresh_status()
            self.catch_up()
            if self.status in STOPPED:
                self.catch_up()
                return
            sleep(POLL_INTERVAL_S)

    def run(self, ws_url: str | None, sleep: Callable[[float], None] = time.sleep) -> int:
        """Follow the run until it stops (websocket, else REST polling; ``ws_url`` None: polling only), then
        print its outcome with its message; 0 when it succeeded."""
        self.refresh_status()
        if self.status not in STOPPED:
            followed = ws_url is not None and asyncio.run(self.via_websocket(ws_url))
            if not followed:
                if ws_url is not None:
                    print("(websocket unavailable: polling the REST API)", file=sys.stderr)
                self.via_polling(sleep)
        self.catch_up()
        return self.finish()


# --- commands --------------------------------------------------------------------------------------


def _cmd_login(args: argparse.Namespace) -> int:
    url = normalize_url(args.url)
    password = (
        args.password if args.password is not None else getpass.getpass(f"password for {args.username}: ")
    )
    issued = Api(url).issue_token(args.username, password, name=f"rlvr CLI on {socket.gethostname()}"[:100])
    path = save_credentials(Credentials(url=url, token=str(issued["token"]), username=args.username))
    expires = (
        f" until {str(issued['expires_at'])[:16].replace('T', ' ')} UTC" if issued.get("expires_at") else ""
    )
    print(f"logged in to {url} as {args.username}; token (valid{expires}) stored in {path}")
    return 0


def _cmd_logout(args: argparse.Namespace) -> int:
    """Revoke the stored token on the server (when it still answers), then forget it here."""
    path = credentials_path()
    if path.is_file():
        try:
            creds = load_credentials(path)
            Api(creds.url, creds.token).revoke_current_token()
        except ClientError as err:
            print(f"(the server did not revoke the token: {err.args[0].splitlines()[0]})", file=sys.stderr)
    path.unlink(missing_ok=True)
    print(f"removed {path}")
    return 0


def _api(args: argparse.Namespace) -> tuple[Api, Credentials]:
    creds = load_credentials()
    return Api(args.url or creds.url, creds.token), creds


def _cmd_runs(args: argparse.Namespace) -> int:
    api, _ = _api(args)
    names = {int(p["id"]): str(p.get("slug") or p.get("name")) for p in api.projects()}
    project_id = api.project_id(args.project) if args.project else None
    print(format_runs_table(api.runs(project_id), names))
    return 0


def _cmd_launch(args: argparse.Namespace) -> int:
    api, _ = _api(args)
    config = load_experiment_file(args.file)
    name = args.name or str(config.get("name") or Path(args.file).stem)
    experiment = api.create_experiment(api.project_id(args.project), name, config, args.description)
    run = api.launch(int(experiment["id"]))
    print(f"experiment {experiment['id']} ({name}): run {run['id']} {run.get('status', 'queued')}")
    print(f"follow it with: rlvr tail {run['id']}")
    return 0


def _cmd_tail(args: argparse.Namespace) -> int:
    api, creds = _api(args)
    ws_url = None if args.poll else websocket_url(api.url, args.run_id, creds.token)
    return Tail(api, args.run_id, sys.stdout).run(ws_url)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlvr", description="RLVR Studio API client.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("login", help="get an API token and store it")
    p.add_argument("--url", required=True, help="server, e.g. http://localhost:8000")
    p.add_argument("--username", required=True)
    p.add_argument("--password", help="default: prompt (keeps it out of the shell history)")
    p.set_defaults(func=_cmd_login)

    p = sub.add_parser("logout", help="revoke the stored token on the server and forget it")
    p.set_defaults(func=_cmd_logout)

    p = sub.add_parser("runs", help="list runs of your projects")
    p.add_argument("--project", help="only this project (id, slug or name)")
    p.set_defaults(func=_cmd_runs)

    p = sub.add_parser("launch", help="create an experiment from a YAML/JSON file and launch a run")
    p.add_argument("file", help="experiment file (.yaml, .yml or .json), as for `rlvr train`")
    p.add_argument("--project", required=True, help="project id, slug or name")
    p.add_argument("--name", help="experiment name (default: the file's `name`, else its file name)")
    p.add_argument("--description", default="")
    p.set_defaults(func=_cmd_launch)

    p = sub.add_parser("tail", help="print a run's metrics as they arrive, until it ends")
    p.add_argument("run_id", type=int)
    p.add_argument("--poll", action="store_true", help="poll the REST API instead of using the websocket")
    p.set_defaults(func=_cmd_tail)

    for name in ("runs", "launch", "tail"):
        sub.choices[name].add_argument("--url", help="server (default: the one you logged in to)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ClientError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `rlvr tail 3 | head`: the reader left
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- keeps the interpreter's final flush quiet
        return 0


if __name__ == "__main__":
    sys.exit(main())
