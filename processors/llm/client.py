"""The project's one LLM client: the official ``openai`` SDK against any OpenAI-compatible server.

Production points ``base_url`` at a ``vllm serve`` server (the Helm chart's optional vLLM Deployment);
the LLM step (``processors/llm/step.py``) and the judge panel (``processors/evaluation/judges.py``) both use
:class:`LLMClient`. The SDK brings the timeouts, the retries with exponential backoff (connection errors,
408/409/429 and 5xx answers) and a pooled HTTP client; this module adds what both callers need on top:

- :meth:`LLMClient.structured`: a chat request with ``response_format`` = a JSON schema (vLLM enforces it
  with guided decoding), the answer validated with the pydantic model either way; malformed or truncated
  answers are retried up to ``max_retries`` times (a sampling server may answer better the second time);
- :meth:`LLMClient.complete`: plain text answers (the judges), ``n`` samples per prompt;
- :meth:`LLMClient.map`: run calls concurrently, at most ``concurrency`` in flight;
- every failure is an :class:`LLMError` with a short reason ``code`` (:data:`REASONS`) and no text from
  the request or the answer, so callers can record it as data.

The API key goes only into the ``Authorization`` header: never into logs, reprs or errors.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pydantic import BaseModel, SecretStr, ValidationError

from processors.pipeline import mask_url

logger = logging.getLogger(__name__)

__all__ = ["REASONS", "LLMClient", "LLMError", "classify"]

#: Why a call failed, as recorded in NoteMetrics and counted by OpenTelemetry (never with text).
REASONS: tuple[str, ...] = (
    "timeout",      # no answer within timeout_s (after the retries)
    "connection",   # the server could not be reached
    "server_error",  # 5xx after the retries
    "rate_limited",  # 429 after the retries
    "auth",         # 401 / 403: the API key is wrong or missing
    "bad_request",  # other 4xx (unknown model, request too long for the context, ...)
    "refusal",      # the model refused (the message's ``refusal`` field)
    "malformed",    # the answer is not JSON of the requested schema
    "truncated",    # the answer was cut at max_tokens (finish_reason "length")
    "empty",        # no choices / no content
    "error",        # anything else the SDK raised
)

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")


class LLMError(Exception):
    """A failed LLM call. ``code`` is one of :data:`REASONS`; the message never holds note text."""

    def __init__(self, code: str, detail: str = "") -> None:
        self.code = code if code in REASONS else "error"
        super().__init__(f"LLM call failed: {self.code}" + (f" ({detail})" if detail else ""))


def classify(exc: BaseException) -> LLMError:
    """The :class:`LLMError` for an exception the SDK raised (its type and status, never its body)."""
    import openai

    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return LLMError("timeout")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError("connection")
    if isinstance(exc, openai.APIStatusError):
        status = int(getattr(exc, "status_code", 0) or 0)
        if status in (401, 403):
            return LLMError("auth", f"HTTP {status}")
        if status == 429:
            return LLMError("rate_limited", "HTTP 429")
        if status >= 500:
            return LLMError("server_error", f"HTTP {status}")
        return LLMError("bad_request", f"HTTP {status}")
    if isinstance(exc, ValidationError | ValueError):  # the SDK could not parse the server's body
        return LLMError("malformed", type(exc).__name__)
    return LLMError("error", type(exc).__name__)


class LLMClient:
    """A pooled, thread-safe client for one model on one OpenAI-compatible server.

    ``url`` is the API base (``http://host:8000/v1``; a URL without ``/v1`` gets it appended). ``api_key``:
    the server's bearer token (vLLM ``--api-key``); servers without one accept any value."""

    def __init__(self, url: str, model: str, *, api_key: SecretStr | str | None = None, timeout_s: float = 30.0,
                 max_retries: int = 2, concurrency: int = 8, temperature: float = 0.0) -> None:
        import openai

        if not url or not model:
            raise ValueError("the LLM client needs a url and a model")
        base = url.rstrip("/")
        if not base.endswith("/v1"):
            base += "/v1"
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        #: the base URL as shown (repr, logs): a password in it is masked; the SDK gets the real one
        self.url = mask_url(base)
        self.model = model
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.concurrency = int(concurrency)
        self.temperature = float(temperature)
        # the SDK's pooled HTTP client; at most ``concurrency`` requests use it at once (``map``'s threads)
        self._client = openai.OpenAI(base_url=base, api_key=key or "EMPTY", timeout=self.timeout_s,
                                     max_retries=self.max_retries)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        # the SDK logs request options (bodies: note text) at DEBUG; never let them through
        for name in ("openai", "httpx", "httpx2", "httpcore", "httpcore2"):
            logging.getLogger(name).setLevel(max(logging.getLogger(name).level, logging.WARNING))

    def __repr__(self) -> str:  # no key
        return f"LLMClient(url={self.url!r}, model={self.model!r}, concurrency={self.concurrency})"

    @classmethod
    def from_settings(cls, settings: Any) -> LLMClient:
        """From the ``llm`` settings section (``streams.settings.LLMSettings``) or the step's options."""
        return cls(settings.url, settings.model, api_key=settings.api_key, timeout_s=settings.timeout_s,
                   max_retries=settings.max_retries, concurrency=settings.concurrency)

    # -- calls -----------------------------------------------------------------------------------------

    def _chat(self, messages: Sequence[dict[str, str]], *, max_tokens: int, n: int = 1,
              response_format: dict[str, Any] | None = None, temperature: float | None = None) -> Any:
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages), "max_tokens": int(max_tokens),
                                  "temperature": self.temperature if temperature is None else temperature}
        if n != 1:
            kwargs["n"] = n
        if response_format is not None:
            kwargs["response_format"] = response_format
        try:
            return self._client.chat.completions.create(**kwargs)
        except Exception as exc:  # noqa: BLE001 - every SDK failure becomes a reason code
            raise classify(exc) from None

    def complete(self, prompt: str, *, max_tokens: int = 16, n: int = 1,
                 temperature: float | None = None) -> list[str]:
        """``n`` text answers to one user prompt (a judge's vote per answer)."""
        resp = self._chat([{"role": "user", "content": prompt}], max_tokens=max_tokens, n=n,
                          temperature=temperature)
        choices = list(getattr(resp, "choices", None) or [])
        if not choices:
            raise LLMError("empty")
        return [str(c.message.content or "") for c in choices]

    def structured(self, messages: Sequence[dict[str, str]], schema: type[T], *, name: str,
                   max_tokens: int = 512) -> T:
        """One answer as ``schema`` (a pydantic model), asked with a ``json_schema`` response format.

        Refusals fail at once; truncated or malformed answers are asked again up to ``max_retries`` times,
        then fail with that reason."""
        response_format = {"type": "json_schema",
                           "json_schema": {"name": name, "schema": schema.model_json_schema(), "strict": True}}
        last = LLMError("empty")
        for _attempt in range(self.max_retries + 1):
            try:
                resp = self._chat(messages, max_tokens=max_tokens, response_format=response_format)
            except LLMError as exc:
                if exc.code != "malformed":  # the SDK already retried what is worth retrying
                    raise
                last = exc
                continue
            choices = list(getattr(resp, "choices", None) or [])
            if not choices:
                last = LLMError("empty")
                continue
            choice = choices[0]
            message = choice.message
            if getattr(message, "refusal", None):
                raise LLMError("refusal")
            if choice.finish_reason == "length":
                last = LLMError("truncated")
                continue
            content = message.content
            if not content:
                last = LLMError("empty")
                continue
            try:
                return schema.model_validate_json(content)
            except ValidationError:
                last = LLMError("malformed")
                continue
        raise last

    def map(self, fn: Callable[[Any], R], items: Iterable[Any]) -> list[R | LLMError]:
        """``fn`` over ``items`` with at most ``concurrency`` calls in flight; results in order. A call that
        raises :class:`LLMError` yields the error in its place (other exceptions become ``error``)."""

        def safe(item: Any) -> R | LLMError:
            try:
                return fn(item)
            except LLMError as exc:
                return exc
            except Exception as exc:  # noqa: BLE001 - a failed call is data for the caller
                logger.warning("LLM call raised %s", type(exc).__name__)
                return LLMError("error", type(exc).__name__)

        items = list(items)
        if len(items) <= 1 or self.concurrency == 1:
            return [safe(i) for i in items]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="deid-llm")
            pool = self._pool
        return list(pool.map(safe, items))

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
        self._client.close()
