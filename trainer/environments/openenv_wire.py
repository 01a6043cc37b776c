"""OpenEnv's wire protocol, spoken with the ``websockets`` package: no ``openenv`` import on the trainer's side.

An OpenEnv server (``openenv.core.env_server.create_app``, openenv 0.10) serves an environment over HTTP and
WebSocket. Its HTTP ``POST /reset`` and ``POST /step`` build a fresh environment for each request and close it
after, so an episode of several steps cannot live there; a session of its own is the WebSocket ``/ws``: one
connection, one environment instance, until either side closes. Messages are JSON text frames:

- ``{"type": "reset", "data": {"seed": ..., "episode_id": ..., **kwargs}}`` (the keys ``reset`` accepts) and
  ``{"type": "step", "data": {<the Action's fields>}}`` answer
  ``{"type": "observation", "data": {"observation": {<fields>}, "reward": float | None, "done": bool,
  "metadata": {...}}}``: the reward and the done flag travel beside the observation's own fields;
- ``{"type": "state"}`` answers ``{"type": "state", "data": {"episode_id": ..., "step_count": ..., ...}}``;
- ``{"type": "close"}`` ends the session (the server closes the connection);
- a failure answers ``{"type": "error", "data": {"message": ..., "code": ...}}``. ``VALIDATION_ERROR`` (an action
  the Action model refuses) keeps the session; a refused session (``CAPACITY_REACHED``: the server holds
  ``max_concurrent_envs`` sessions, 1 unless its ``create_app`` says more) is closed by the server.

Limits: the base URL is checked (``url_problem``) and only that host and port are ever reached: the TCP socket
is opened here and handed to the WebSocket handshake, so no redirect is followed and no proxy is used. Every wait
has a deadline (connect, each answer, close), every message received a size cap (``max_message_bytes``), and
answers are parsed by ``strict_json_loads`` (no NaN, no deep nesting) and checked against the shapes above.
"""

from __future__ import annotations

import json
import socket
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import ClientConnection, connect

from trainer.bounds import UnsafeInput, base_url_problem, strict_json_loads
from trainer.errors import RLVRError

MAX_URL_CHARS = 500
WS_PATH = "/ws"
_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}
_SHOWN_CHARS = 300  # of a server's error message or of an answer that does not parse


class OpenEnvWireError(RLVRError):
    """The OpenEnv server could not be reached, refused the session, failed, or answered something unreadable."""


class InvalidAction(OpenEnvWireError):
    """The server's Action model refused an action (``VALIDATION_ERROR``); the session goes on."""


@dataclass(frozen=True)
class StepResult:
    """One observation as the server sent it: the environment's own fields, and the reward and done beside them."""

    observation: dict[str, Any]
    reward: float | None
    done: bool
    metadata: dict[str, Any]


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an OpenEnv server's base URL, or None."""
    if len(url) > MAX_URL_CHARS:
        return f"is {len(url)} characters long; the limit is {MAX_URL_CHARS}"
    return base_url_problem(url, tuple(_SCHEMES))


def ws_url(base_url: str) -> str:
    """The session endpoint of the server at ``base_url``.

    >>> ws_url("http://127.0.0.1:8000/")
    'ws://127.0.0.1:8000/ws'
    >>> ws_url("https://envs.example/echo")
    'wss://envs.example/echo/ws'
    """
    problem = url_problem(base_url)
    if problem:
        raise OpenEnvWireError(f"OpenEnv base URL {base_url!r} {problem}")
    parts = urlsplit(base_url)
    return urlunsplit((_SCHEMES[parts.scheme], parts.netloc, parts.path.rstrip("/") + WS_PATH, "", ""))


def _shown(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _validation_problems(errors: Any) -> str:
    """pydantic's error list, as the server forwards it, in one line: ``message: Field required; ...``."""
    problems = []
    for e in errors[:8] if isinstance(errors, list) else []:
        if isinstance(e, dict):
            loc = e.get("loc")
            where = ".".join(str(p) for p in loc) if isinstance(loc, list) else ""
            problems.append(f"{where or 'action'}: {e.get('msg', '')}")
    return _shown("; ".join(problems))


class OpenEnvSession:
    """One WebSocket session on an OpenEnv server: one environment instance, reset and stepped in turn.

    Not thread-safe: one caller at a time (an episode is stepped by one thread at a time). ``close()`` is
    idempotent; the session is also a context manager.
    """

    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout_s: float,
        message_timeout_s: float,
        max_message_bytes: int,
    ) -> None:
        self.url = ws_url(base_url)
        self.message_timeout_s = message_timeout_s
        self._stack = ExitStack()
        self._ws: ClientConnection | None = None
        target = urlsplit(self.url)
        port = target.port or (443 if target.scheme == "wss" else 80)
        try:
            # Our own socket: the handshake then follows no redirect (websockets refuses one on a given socket)
            # and no proxy from the environment's variables is used.
            sock = socket.create_connection((target.hostname, port), timeout=connect_timeout_s)
        except OSError as err:
            raise OpenEnvWireError(
                f"cannot reach the OpenEnv server at {base_url} ({_shown(str(err))}): is it running, and is the "
                "URL right?"
            ) from None
        try:
            self._ws = self._stack.enter_context(
                connect(
                    self.url,
                    sock=sock,
                    open_timeout=connect_timeout_s,
                    close_timeout=min(connect_timeout_s, 10.0),
                    max_size=max_message_bytes,
                    compression=None,
                )
            )
        # ValueError: websockets refuses to follow a redirect on a socket it was given
        except (InvalidHandshake, InvalidURI, OSError, TimeoutError, ValueError) as err:
            sock.close()
            raise OpenEnvWireError(
                f"the OpenEnv server at {base_url} refused the WebSocket session on {WS_PATH} "
                f"({_shown(str(err))}): is it an OpenEnv server (create_app) in simulation or production mode?"
            ) from None

    def reset(self, **kwargs: Any) -> StepResult:
        """Start an episode; ``kwargs`` (seed, episode_id, the environment's own reset keys) must be JSON values."""
        return self._observation(self._exchange({"type": "reset", "data": kwargs}))

    def step(self, action: dict[str, Any]) -> StepResult:
        """One action, as the environment's Action fields. InvalidAction when its model refuses them."""
        return self._observation(self._exchange({"type": "step", "data": action}))

    def state(self) -> dict[str, Any]:
        answer = self._exchange({"type": "state"})
        data = answer.get("data")
        if answer.get("type") != "state" or not isinstance(data, dict):
            raise OpenEnvWireError(f"the server answered a state request with {_shown(json.dumps(answer))}")
        return data

    def close(self) -> None:
        """Say goodbye (``close`` message) and close the connection; never raises."""
        if self._ws is None:
            return
        ws, self._ws = self._ws, None
        # The server may have closed already, or the network is gone: closing our side is all that is left.
        with suppress(Exception):
            ws.send(json.dumps({"type": "close"}))
        with suppress(Exception):
            self._stack.close()

    def __enter__(self) -> OpenEnvSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        if self._ws is None:
            raise OpenEnvWireError("the OpenEnv session is closed: start a new one")
        try:
            self._ws.send(json.dumps(message, allow_nan=False))
            raw = self._ws.recv(timeout=self.message_timeout_s)
        except TimeoutError:
            # A late answer would be read as the next one's: the session cannot go on. A server that did not
            # answer in time is busy: close without waiting up to close_timeout for its half of the handshake.
            self._ws.close_timeout = 0
            self.close()
            raise OpenEnvWireError(
                f"the OpenEnv server at {self.url} did not answer a {message['type']} within "
                f"{self.message_timeout_s:g} s (raise the environment's message_timeout_s if its steps are slow)"
            ) from None
        except ConnectionClosed as err:
            raise self._closed(err) from None
        except ValueError as err:  # json.dumps: NaN or infinity in what we were asked to send
            raise OpenEnvWireError(f"cannot send {message['type']}: {err}") from None
        try:
            answer = strict_json_loads(raw)
        except (UnsafeInput, ValueError) as err:
            raise OpenEnvWireError(
                f"the OpenEnv server's answer is not safe JSON ({_shown(str(err))})"
            ) from None
        if not isinstance(answer, dict):
            raise OpenEnvWireError(f"the OpenEnv server's answer is not a JSON object: {_shown(str(raw))}")
        if answer.get("type") == "error":
            raise self._error(answer.get("data"))
        return answer

    def _closed(self, err: ConnectionClosed) -> OpenEnvWireError:
        """The session is over: the server's last word if it left one (a refused session sends its error, then
        closes, before our first message is read), else how the connection closed."""
        ws, self._ws = self._ws, None
        last: Any = None
        if ws is not None:
            with suppress(Exception):  # nothing left, or nothing readable: the close itself is the answer
                last = strict_json_loads(ws.recv(timeout=0))
        self._stack.close()
        if isinstance(last, dict) and last.get("type") == "error":
            return self._error(last.get("data"))
        if err.sent is not None and err.sent.code == 1009:  # "message too big": websockets' max_size
            return OpenEnvWireError(
                f"the OpenEnv server at {self.url} sent a message over max_message_bytes; raise it if the "
                "environment's observations are that large"
            )
        return OpenEnvWireError(f"the OpenEnv server at {self.url} closed the session ({_shown(str(err))})")

    def _error(self, data: Any) -> OpenEnvWireError:
        data = data if isinstance(data, dict) else {}
        code, message = str(data.get("code", "")), _shown(str(data.get("message", "")))
        if code == "VALIDATION_ERROR":
            return InvalidAction(_validation_problems(data.get("errors")) or message)
        if code == "CAPACITY_REACHED":
            self.close()
            return OpenEnvWireError(
                f"the OpenEnv server at {self.url} holds at most {data.get('max_sessions', '?')} sessions at once "
                "and all are taken: raise max_concurrent_envs in its create_app (the environment class must set "
                "SUPPORTS_CONCURRENT_SESSIONS = True), or run fewer episodes at once"
            )
        return OpenEnvWireError(f"the OpenEnv server failed ({code or 'no code'}): {message}")

    @staticmethod
    def _observation(answer: dict[str, Any]) -> StepResult:
        data = answer.get("data")
        if answer.get("type") != "observation" or not isinstance(data, dict):
            raise OpenEnvWireError(f"expected an observation, got {_shown(json.dumps(answer))}")
        observation, reward, done = data.get("observation"), data.get("reward"), data.get("done", False)
        metadata = data.get("metadata") or {}
        if not isinstance(observation, dict) or not isinstance(done, bool) or not isinstance(metadata, dict):
            raise OpenEnvWireError(f"an observation of an unknown shape: {_shown(json.dumps(data))}")
        if reward is not None and not isinstance(reward, int | float):  # bool is an int: True -> 1.0
            raise OpenEnvWireError(
                f"the reward is {type(reward).__name__}, not a number: {_shown(str(reward))}"
            )
        return StepResult(observation, None if reward is None else float(reward), done, metadata)
