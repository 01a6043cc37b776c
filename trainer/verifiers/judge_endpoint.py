"""``judge``: a generative judge behind an OpenAI-compatible endpoint (chat completions), as a reward source.

Each completion is written into a prompt template and sent to ``POST {base_url}/chat/completions`` (vLLM's
``vllm serve``, SGLang, a provider); the judge's reply is parsed by one of two rules:

- ``score``: LLM-as-a-judge grading ("Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena"): the first
  match of a pattern is a number on a scale [min, max], the reward that number normalised to [0, 1];
- ``verdict``: a reference-based verdict, as the model-based verifiers CompassVerifier and General-Reasoner's
  general-verifier give it: the judge compares the response with the reference answer and says CORRECT or
  INCORRECT; reward 1 or 0.

How it differs from OpenRLHF's remote reward model and verl's generative reward model, which it otherwise
follows: a call that still fails after its retries, or a reply that does not parse, is **absent**
(``absent_result``), never a reward of 0, and the run's ``reward_absence`` rule decides what absence means. The
scorer never raises: every failure becomes an absent result whose ``reason`` says why ("timeout after 30 s
(3 tries)", "HTTP 500 ...", "unparseable: ..."), with the judge's output capped at 300 characters and the
latency of the call. Calls run ``concurrency`` at a time in a thread pool; each try is bounded by
``timeout_s``; connection errors, timeouts, 429 and 5xx are retried with capped exponential backoff and
jitter (a ``Retry-After`` is honoured up to ``RETRY_AFTER_CAP_S``), other 4xx are not.

The API key is a project secret named by ``api_key_secret`` (trainer/verifiers/secrets.py); it travels only in
the ``Authorization`` header and is scrubbed from every stored text. Which endpoints a project may reach is
the instance's allow-list (``RLVR_JUDGE_ENDPOINTS``), checked by the web app when a config is saved.
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import string
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import httpx
from pydantic import Field, model_validator

from trainer.bounds import MAX_STRING_CHARS, UnsafeInput, base_url_problem, strict_json_loads
from trainer.samples import Sample
from trainer.user_regex import MAX_PATTERN_CHARS, PatternError, UserPattern, compile_user_pattern
from trainer.verifiers.base import VERIFIERS, VerifierParams, VerifierResult, absent_result, shown
from trainer.verifiers.secrets import MAX_SECRET_NAME_CHARS, scrub, secret, secret_name_problem

MAX_URL_CHARS = 500
MAX_RESPONSE_BYTES = 1 << 20  # a chat completion of at most max_tokens tokens is far smaller
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 30.0
OUTPUT_CHARS = 300  # judge output kept in a detail record
PLACEHOLDERS = ("prompt", "completion", "answer", "min", "max")

DEFAULT_SCORE_TEMPLATE = (
    "Question:\n{prompt}\n\nReference answer: {answer}\n\nResponse:\n{completion}\n\n"
    "Rate how correct the response is, from {min} to {max}. Reply with the number only.\nScore:"
)
DEFAULT_VERDICT_TEMPLATE = (
    "Judge whether the response's final answer is equivalent to the reference answer.\n\n"
    "Question:\n{prompt}\n\nReference answer: {answer}\n\nResponse:\n{completion}\n\n"
    "Reply with CORRECT or INCORRECT only."
)


class ScoreParse(VerifierParams):
    """A number on a scale, read from the judge's reply."""

    kind: Literal["score"] = Field("score", description="'score': the reply holds a number on [min, max].")
    pattern: str = Field(
        r"(-?\d+(?:\.\d+)?)",
        max_length=MAX_PATTERN_CHARS,
        description="Regular expression searched in the reply (RE2 syntax); its first group (or the whole match) "
        "of the first match must be a number between min and max, else the score is absent (unparseable).",
    )
    min: float = Field(0.0, ge=-1e6, le=1e6, description="Lowest score of the scale (reward 0).")
    max: float = Field(10.0, ge=-1e6, le=1e6, description="Highest score of the scale (reward 1).")

    @model_validator(mode="after")
    def _check(self) -> ScoreParse:
        if not self.max > self.min:
            raise ValueError(f"parse.max ({self.max:g}) must be greater than parse.min ({self.min:g})")
        _compile(self.pattern, "parse.pattern")
        return self


class VerdictParse(VerifierParams):
    """A verdict against the reference answer, as reference-based verifiers (CompassVerifier) give it."""

    kind: Literal["verdict"] = Field(
        "verdict", description="'verdict': the reply says whether the response matches the reference answer."
    )
    correct_pattern: str = Field(
        r"\bCORRECT\b",
        max_length=MAX_PATTERN_CHARS,
        description="RE2 pattern of a CORRECT verdict (reward 1). When both patterns match, the earlier match wins.",
    )
    incorrect_pattern: str = Field(
        r"\bINCORRECT\b",
        max_length=MAX_PATTERN_CHARS,
        description="RE2 pattern of an INCORRECT verdict (reward 0). When neither matches, the score is absent.",
    )

    @model_validator(mode="after")
    def _check(self) -> VerdictParse:
        _compile(self.correct_pattern, "parse.correct_pattern")
        _compile(self.incorrect_pattern, "parse.incorrect_pattern")
        return self


class JudgeParams(VerifierParams):
    base_url: str = Field(
        max_length=MAX_URL_CHARS,
        description="The endpoint's OpenAI-compatible base URL, ending in /v1 as OpenAI clients expect (e.g. "
        "http://judge-host:8000/v1 for `vllm serve`); http or https, no credentials in it. It must be on the "
        "instance's allow-list of judge endpoints.",
    )
    model: str = Field(min_length=1, max_length=200, description="The served model's name at that endpoint.")
    api_key_secret: str | None = Field(
        None,
        max_length=MAX_SECRET_NAME_CHARS,
        description="The NAME of the project secret that holds the API key (sent as 'Authorization: Bearer'), "
        "or null for an endpoint without a key. Never the key itself.",
    )
    prompt_template: str = Field(
        DEFAULT_SCORE_TEMPLATE,
        max_length=MAX_STRING_CHARS,
        description="The judge's user message: a format string with {completion} and optionally {prompt}, "
        "{answer} (the reference answer), {min} and {max} (score scale); user text is substituted, never "
        "read as a template. Write {{ and }} for literal braces. Default: a 0-10 grading prompt, or, when "
        "parse.kind is 'verdict', a CORRECT/INCORRECT prompt against the reference answer.",
    )
    system_prompt: str | None = Field(
        None, max_length=MAX_STRING_CHARS, description="System message before each judge prompt (or none)."
    )
    parse: Annotated[ScoreParse | VerdictParse, Field(discriminator="kind")] = Field(
        default_factory=ScoreParse,
        description="How the reply becomes a reward: {kind: score, pattern, min, max} (LLM-as-a-judge grading) "
        "or {kind: verdict, correct_pattern, incorrect_pattern} (reference-based verdict).",
    )
    concurrency: int = Field(8, ge=1, le=64, description="Calls in flight at once.")
    timeout_s: float = Field(30.0, gt=0, le=600, description="Seconds each try may take.")
    retries: int = Field(
        2, ge=0, le=10, description="Further tries after a connection error, a timeout, HTTP 429 or 5xx."
    )
    backoff_s: float = Field(
        0.5,
        ge=0,
        le=60,
        description="First wait before a retry; doubled each retry, with jitter, capped at 30 s (a Retry-After "
        "header is honoured up to 30 s).",
    )
    max_tokens: int = Field(256, ge=1, le=32768, description="Tokens the judge may write per reply.")
    temperature: float = Field(0.0, ge=0, le=2, description="Judge sampling temperature (0: greedy).")
    correct_above: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Score kind: a completion counts as correct when its reward exceeds this.",
    )

    @model_validator(mode="after")
    def _check(self) -> JudgeParams:
        problem = url_problem(self.base_url)
        if problem:
            raise ValueError(f"base_url {problem}")
        if self.api_key_secret is not None:
            problem = secret_name_problem(self.api_key_secret)
            if problem:
                raise ValueError(f"api_key_secret {problem}")
        # The score kind's default, sent back unchanged (the experiment form fills every default), means "the
        # default" for a verdict judge too, not a template to refuse for its {min}/{max}.
        default = (
            "prompt_template" not in self.model_fields_set or self.prompt_template == DEFAULT_SCORE_TEMPLATE
        )
        if self.parse.kind == "verdict" and default:
            object.__setattr__(self, "prompt_template", DEFAULT_VERDICT_TEMPLATE)
        _check_template(self.prompt_template, self.parse.kind)
        return self


def _compile(pattern: str, what: str) -> UserPattern:
    try:
        return compile_user_pattern(pattern, what=what)
    except PatternError as err:
        raise ValueError(str(err)) from None


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a judge endpoint's base URL, or None."""
    return base_url_problem(url, ("http", "https"), "store the API key as a project secret")


def chat_completions_url(base_url: str) -> str:
    """``base_url`` with or without its trailing slash -> the chat completions address.

    >>> chat_completions_url("http://h:8000/v1/")
    'http://h:8000/v1/chat/completions'
    """
    return base_url.rstrip("/") + "/chat/completions"


def _check_template(template: str, kind: str) -> None:
    try:
        fields = [(f[1], f[2], f[3]) for f in string.Formatter().parse(template) if f[1] is not None]
    except ValueError as err:
        raise ValueError(
            f"prompt_template is not a valid format string ({err}); write {{{{ and }}}} for literal braces"
        ) from None
    valid = PLACEHOLDERS if kind == "score" else ("prompt", "completion", "answer")
    unknown = sorted({name for name, _, _ in fields if name not in valid})
    if unknown:
        raise ValueError(
            f"prompt_template uses unknown placeholder(s) {unknown}; valid: {', '.join('{' + p + '}' for p in valid)}"
        )
    if any(spec or conversion for _, spec, conversion in fields):
        raise ValueError("prompt_template placeholders take no format spec or conversion: write {completion}")
    names = {name for name, _, _ in fields}
    if "completion" not in names:
        raise ValueError("prompt_template must contain {completion}: the judge has to see the response")
    if kind == "verdict" and "answer" not in names:
        raise ValueError("a verdict judge compares with the reference: prompt_template must contain {answer}")


def fill_template(template: str, values: dict[str, str]) -> str:
    """The template with each placeholder replaced by its value, which is never itself read as a template.

    >>> fill_template("Q: {prompt} A: {completion}", {"prompt": "{answer}", "completion": "4"})
    'Q: {answer} A: 4'
    """
    out = []
    for literal, name, _, _ in string.Formatter().parse(template):
        out.append(literal)
        if name is not None:
            out.append(values[name])
    return "".join(out)


@dataclass
class _Reply:
    """One call's outcome: the judge's text, or why there is none."""

    text: str | None
    reason: str | None
    tries: int
    latency_s: float


class _Unusable(Exception):
    """A reply that arrived but cannot be used (not retried)."""


@VERIFIERS.register("judge")
class EndpointJudge:
    """A judge model behind an OpenAI-compatible chat-completions endpoint; a failed or unparseable call is absent.

    Score kind: reward = (number - min) / (max - min); verdict kind: reward 1 (CORRECT) or 0 (INCORRECT).
    ``detail`` holds ``output`` (the reply, capped), ``extracted``, ``latency_s`` and ``tries``; an absent
    result's ``absent`` says why.
    """

    name: ClassVar[str] = "judge"
    Params: ClassVar[type[VerifierParams]] = JudgeParams
    absent_on_failure: ClassVar[bool] = True  # scoring.py: a broken call says nothing about the completions

    def __init__(self, params: JudgeParams) -> None:
        self.params = params
        self._url = chat_completions_url(params.base_url)
        self.__key: str | None = None
        self._client: httpx.Client | None = None
        self._parse = params.parse
        if isinstance(params.parse, ScoreParse):
            self._score_regex = compile_user_pattern(params.parse.pattern)
        else:
            self._correct = compile_user_pattern(params.parse.correct_pattern)
            self._incorrect = compile_user_pattern(params.parse.incorrect_pattern)
        self._random = random.Random()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EndpointJudge(url={self._url!r}, model={self.params.model!r})"

    def load(self) -> None:
        """Look the API key up (a VerifierError saying how to set a missing secret) and open the connection pool.

        ``build_verifiers`` calls it when a run is built, so a missing secret stops the run before its first
        step; the web process, which only validates params, never needs the secret."""
        with self._lock:
            if self._client is not None:
                return
            self.__key = secret(self.params.api_key_secret) if self.params.api_key_secret else None
            self._client = httpx.Client(
                timeout=httpx.Timeout(self.params.timeout_s),
                limits=httpx.Limits(
                    max_connections=self.params.concurrency, max_keepalive_connections=self.params.concurrency
                ),
                follow_redirects=False,  # a redirect would carry the key elsewhere
            )

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        if len(completions) != len(samples):
            problem = f"got {len(completions)} completions but {len(samples)} samples: pass one sample per completion"
            return [absent_result(problem) for _ in completions]
        if not completions:
            return []
        try:
            self.load()
        except Exception as err:  # a missing secret: every score is absent, with how to set it
            return [absent_result(self._scrub(str(err))) for _ in completions]
        with ThreadPoolExecutor(max_workers=min(self.params.concurrency, len(completions))) as pool:
            return list(pool.map(self._judge_one, completions, samples))

    def _judge_one(self, completion: str, sample: Sample) -> VerifierResult:
        try:
            if self._parse.kind == "verdict" and sample.answer is None:
                return absent_result("no reference answer to judge against (a verdict judge needs one)")
            reply = self._call(self._messages(completion, sample))
            timing = {"latency_s": round(reply.latency_s, 4), "tries": reply.tries}
            if reply.text is None:
                return absent_result(self._scrub(reply.reason or "no reply"), **timing)
            output = self._scrub(reply.text)
            return self._read(output, timing)
        except Exception as err:  # never raises while scoring: a bug here is an absent score, not a crash
            return absent_result(self._scrub(f"judge failed: {type(err).__name__}: {err}"))

    def _messages(self, completion: str, sample: Sample) -> list[dict[str, str]]:
        values = {
            "prompt": sample.prompt,
            "completion": completion,
            "answer": "" if sample.answer is None else sample.answer,
        }
        if isinstance(self._parse, ScoreParse):
            values |= {"min": f"{self._parse.min:g}", "max": f"{self._parse.max:g}"}
        messages = [{"role": "user", "content": fill_template(self.params.prompt_template, values)}]
        if self.params.system_prompt is not None:
            messages.insert(0, {"role": "system", "content": self.params.system_prompt})
        return messages

    def _read(self, output: str, timing: dict[str, Any]) -> VerifierResult:
        shown_output = shown(output, OUTPUT_CHARS)
        if isinstance(self._parse, ScoreParse):
            low, high = self._parse.min, self._parse.max
            found = self._score_regex.search(output)
            text = None if found is None else (found.group(1) if self._score_regex.groups else found.group(0))
            try:
                value = float(text) if text is not None else math.nan
            except ValueError:
                value = math.nan
            if not low <= value <= high:
                why = (
                    "no match of parse.pattern"
                    if text is None
                    else f"{shown(text, 40)!r} is not a number in [{low:g}, {high:g}]"
                )
                return absent_result(f"unparseable: {why}", output=shown_output, **timing)
            reward = (value - low) / (high - low)
            return VerifierResult(
                reward,
                reward > self.params.correct_above,
                {"extracted": value, "output": shown_output, **timing},
            )
        correct = self._correct.search(output)
        incorrect = self._incorrect.search(output)
        if correct is None and incorrect is None:
            return absent_result(
                "unparseable: neither verdict pattern matches", output=shown_output, **timing
            )
        verdict = incorrect is None or (correct is not None and correct.start() < incorrect.start())
        detail = {"extracted": "CORRECT" if verdict else "INCORRECT", "output": shown_output, **timing}
        return VerifierResult(1.0 if verdict else 0.0, verdict, detail)

    def _call(self, messages: list[dict[str, str]]) -> _Reply:
        """POST with retries: connection errors, timeouts, 429 and 5xx are retried, other failures are not."""
        started = time.monotonic()
        tries = self.params.retries + 1
        last = "no try made"
        for attempt in range(tries):
            retry_after: float | None = None
            try:
                status, headers, body = self._post(messages)
            except httpx.TimeoutException:
                last = f"timeout after {self.params.timeout_s:g} s"
            except httpx.TransportError as err:
                last = f"connection failed: {type(err).__name__}: {err}"
            except _Unusable as err:
                return _Reply(None, str(err), attempt + 1, time.monotonic() - started)
            else:
                if status == 200:
                    text, reason = _content(body)
                    return _Reply(text, reason, attempt + 1, time.monotonic() - started)
                last = f"HTTP {status} {httpx.codes.get_reason_phrase(status)}: {_snippet(body)}".rstrip(": ")
                if status != 429 and status < 500:
                    return _Reply(None, last, attempt + 1, time.monotonic() - started)
                retry_after = _retry_after(headers.get("retry-after"))
            if attempt + 1 < tries:
                time.sleep(self._backoff(attempt, retry_after))
        return _Reply(
            None, f"{last} ({tries} {'try' if tries == 1 else 'tries'})", tries, time.monotonic() - started
        )

    def _post(self, messages: list[dict[str, str]]) -> tuple[int, httpx.Headers, bytes]:
        """One try: the status, headers and body (at most MAX_RESPONSE_BYTES), bounded by timeout_s."""
        body = {
            "model": self.params.model,
            "messages": messages,
            "max_tokens": self.params.max_tokens,
            "temperature": self.params.temperature,
        }
        headers = {"Authorization": f"Bearer {self.__key}"} if self.__key else {}
        deadline = time.monotonic() + self.params.timeout_s
        assert self._client is not None, "load() opens the client"
        with self._client.stream("POST", self._url, json=body, headers=headers) as response:
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise _Unusable(f"unparseable: the reply is larger than {MAX_RESPONSE_BYTES >> 20} MiB")
                if (
                    time.monotonic() > deadline
                ):  # a server that trickles bytes: each read waits at most timeout_s
                    raise httpx.ReadTimeout("the whole reply took longer than timeout_s")
                chunks.append(chunk)
            # Scrubbed before any part is cut out for a message: a server that echoes the key leaks none of it.
            content = self._scrub(b"".join(chunks).decode("utf-8", "replace")).encode()
            return response.status_code, response.headers, content

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        with self._lock:
            jitter = self._random.uniform(0.5, 1.0)
        wait = min(BACKOFF_CAP_S, self.params.backoff_s * 2**attempt) * jitter
        return max(wait, retry_after) if retry_after is not None else wait

    def _scrub(self, text: str) -> str:
        return scrub(text, self.__key) if self.__key else scrub(text)


def _content(body: bytes) -> tuple[str | None, str | None]:
    """The reply's ``choices[0].message.content``, or why it is unusable."""
    try:
        data = strict_json_loads(body)
    except (UnsafeInput, json.JSONDecodeError, UnicodeDecodeError):
        return None, f"unparseable: the reply is not JSON: {_snippet(body)}"
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None, f"unparseable: the reply has no choices[0].message.content: {_snippet(body)}"
    if not isinstance(content, str):
        return None, "unparseable: choices[0].message.content is not text"
    return content, None


def _snippet(body: bytes, limit: int = 200) -> str:
    text = body[: limit * 4].decode("utf-8", "replace").strip()
    return shown(" ".join(text.split()), limit) or ""


def _retry_after(value: str | None) -> float | None:
    """A Retry-After header (seconds or an HTTP date) as seconds, capped at RETRY_AFTER_CAP_S."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return min(RETRY_AFTER_CAP_S, max(0.0, seconds))
