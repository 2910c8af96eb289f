"""LLM providers for the judge: OpenAI-compatible chat completions and Anthropic messages.

Any server speaking the OpenAI chat-completions API (OpenAI, vLLM, Ollama, llama.cpp server) is
reached through the official ``openai`` client with a configurable base URL; Anthropic through the
``anthropic`` client; both come with ``pip install "platinum-jax[judge]"`` and are imported
only when a provider is made.  API keys are read only from environment variables and never stored.

Transient failures (HTTP 429, 5xx, timeouts, dropped connections) are retried here with
exponential backoff and full jitter; the clients' own retries are switched off so that every
attempt is visible and the policy is the same for both providers.
"""

from __future__ import annotations

import inspect
import os
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from platinum_jax._extras import require

__all__ = [
    "JudgeConfig",
    "Provider",
    "OpenAIChatProvider",
    "AnthropicProvider",
    "make_provider",
    "RateLimiter",
    "TransientError",
    "PermanentError",
    "FatalProviderError",
    "CancelledCall",
    "DEFAULT_KEY_ENV",
    "redact",
]

PROVIDERS = ("openai", "anthropic")
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


class TransientError(RuntimeError):
    """A failure worth retrying later: rate limit, server error, timeout, connection drop."""


class PermanentError(RuntimeError):
    """A failure of this one request that retrying will not fix (e.g. HTTP 400)."""


class FatalProviderError(ValueError):
    """A failure that will hit every request (bad key, unknown model, wrong URL): stop the run."""


class CancelledCall(RuntimeError):
    """The run was stopped (Ctrl-C or a fatal error elsewhere) before this call was sent."""


REDACTED = "[REDACTED]"
# Shapes of credentials that servers and proxies echo back in error text: provider keys
# (OpenAI/Anthropic sk-..., Google AIza..., GitHub gh?_..., Hugging Face hf_..., AWS AKIA...),
# bearer tokens and "api_key: ..." / "Authorization: ..." pairs.
_NOT_DONE = r"(?!\[REDACTED\])"
_VALUE = r"[^\s\"',;}\]]+"
_KEY_SHAPES = [
    # "api_key": "...", Authorization: Bearer ..., x-api-key=...: keep the name, drop the value
    re.compile(r"(?i)(\b(?:x-)?api[-_]?key|\bauthorization|\baccess[-_]?token|\bsecret)"
               r"([\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic)\s+)?+)" + _NOT_DONE + _VALUE),
    re.compile(r"(?i)(\b(?:bearer|basic)\s+)" + _NOT_DONE + _VALUE),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
]


def redact(text: str, secrets=(), shapes: bool = True) -> str:
    """``text`` with every occurrence of ``secrets`` (and, with ``shapes``, anything shaped like
    a credential) replaced by ``[REDACTED]``.

    Provider errors get both before they are shown or stored, so a server that echoes the
    request headers cannot leak the API key; replies get the secrets only, so that a rationale
    that says "basic arithmetic" is kept as written.
    """
    if not isinstance(text, str):
        return text
    for secret in sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    if not shapes:
        return text
    for shape in _KEY_SHAPES:
        text = shape.sub(lambda m: "".join(g for g in m.groups() if g) + REDACTED, text)
    return text
    for secret in sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for shape in _KEY_SHAPES:
        if shape.groups == 3:
            text = shape.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
        elif shape.groups == 1:
            text = shape.sub(lambda m: m.group(1) + " " + REDACTED, text)
        else:
            text = shape.sub(REDACTED, text)
    return text


@dataclass(frozen=True)
class JudgeConfig:
    """One judge: a provider, a model and its sampling, timeout and retry settings.

    ``timeout`` is per HTTP request in seconds; ``max_retries`` bounds retries of transient
    errors (429/5xx/timeout) with backoff ``uniform(0, min(backoff_max, backoff_base 2^k))``;
    ``parse_retries`` bounds re-asks after a malformed or out-of-range reply.
    ``temperature``/``max_tokens`` set to None are not sent (OpenAI-compatible servers only);
    ``extra`` holds further request arguments, e.g. ``{"seed": 0}``; they are part of the cache key.
    The installed ``anthropic`` client may not accept ``temperature``; it is then not sent.
    """

    provider: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = 0.0
    max_tokens: int | None = 512
    timeout: float = 60.0
    max_retries: int = 5
    parse_retries: int = 2
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"unknown judge provider {self.provider!r}; use one of {list(PROVIDERS)}")
        if not self.model or not self.model.strip():
            raise ValueError("the judge model name is empty; write e.g. openai:gpt-4o-mini")
        if self.temperature is not None and not (0 <= float(self.temperature) < float("inf")):
            raise ValueError(f"temperature (--temperature) must be a number >= 0, got "
                             f"{self.temperature}; 0 is deterministic, around 0.7 samples")
        if not (self.timeout > 0):
            raise ValueError(f"timeout must be positive seconds, got {self.timeout}")
        for name in ("max_retries", "parse_retries", "max_tokens"):
            if getattr(self, name) is not None and int(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be non-negative, got {getattr(self, name)}")
        if self.backoff_base < 0 or self.backoff_max < 0:
            raise ValueError("backoff_base and backoff_max must be non-negative")

    @classmethod
    def from_spec(cls, spec: str, **kwargs) -> JudgeConfig:
        """Parse ``"openai:MODEL"`` or ``"anthropic:MODEL"`` (the model may itself contain ':')."""
        provider, sep, model = spec.partition(":")
        if not sep or not model:
            raise ValueError(f"judge {spec!r} must look like openai:MODEL or anthropic:MODEL")
        return cls(provider=provider.strip().lower(), model=model.strip(), **kwargs)

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def key_env(self) -> str:
        return self.api_key_env or DEFAULT_KEY_ENV[self.provider]

    def sampling(self) -> dict:
        """The settings that change a reply, part of the cache key."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, **self.extra}


def _api_key(config: JudgeConfig) -> str:
    key = os.environ.get(config.key_env)
    if not key:
        raise ValueError(
            f"judge {config.name}: environment variable {config.key_env} is not set; export your "
            f"API key there (for a local server without authentication any non-empty value works)"
        )
    return key


class RateLimiter:
    """Token bucket shared by worker threads: at most ``rate`` requests per second, bursts of ``burst``."""

    def __init__(self, rate: float | None, burst: int = 1):
        if rate is not None and not rate > 0:
            raise ValueError(f"rate limit must be positive requests per second, got {rate}")
        self.rate, self.burst = rate, max(1, int(burst))
        self._tokens = float(self.burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def acquire(self) -> None:
        if self.rate is None:
            return
        while True:
            with self._lock:
                now = time.monotonic()
                self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
                self._last = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                wait = (1 - self._tokens) / self.rate
            time.sleep(wait)


class Provider:
    """Base class: ``chat(messages) -> text`` with the shared retry/backoff policy."""

    def __init__(self, config: JudgeConfig, limiter: RateLimiter | None = None,
                 sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None):
        self.config = config
        self.limiter = limiter or RateLimiter(None)
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.requests = 0  # HTTP attempts made through this provider
        self._count_lock = threading.Lock()
        self.secrets: list[str] = []  # redacted from every error and reply
        self.stop = threading.Event()  # set to stop sending: pending calls raise CancelledCall

    def _request(self, messages: list[dict]) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def chat(self, messages: list[dict]) -> tuple[str, int]:
        """Send ``messages``; return (reply text, transient errors absorbed).

        Raises :class:`TransientError` once ``max_retries`` retries are used up, and
        :class:`CancelledCall` (before sending anything more) once :attr:`stop` is set.  Error
        messages and the reply pass through :func:`redact` with this provider's key.
        """
        cfg = self.config
        for attempt in range(cfg.max_retries + 1):
            if self.stop.is_set():
                raise CancelledCall("the run was stopped before this call was sent")
            self.limiter.acquire()
            with self._count_lock:
                self.requests += 1
            try:
                return redact(self._request(messages), self.secrets, shapes=False), attempt
            except TransientError as exc:
                if attempt == cfg.max_retries:
                    raise TransientError(redact(f"gave up after {attempt + 1} attempt(s): {exc}",
                                                self.secrets)) from None
                cap = min(cfg.backoff_max, cfg.backoff_base * 2.0**attempt)
                delay = self._rng.uniform(0.0, cap)  # full jitter spreads out retry storms
                if self._sleep is time.sleep:
                    self.stop.wait(delay)  # a stop request cuts the back-off short
                else:
                    self._sleep(delay)
            except (PermanentError, FatalProviderError) as exc:
                raise type(exc)(redact(str(exc), self.secrets)) from None
        raise AssertionError("unreachable")


def _unusable(what) -> TransientError:
    """A reply with HTTP 200 that is not a chat completion (an HTML page from a proxy, text
    that is not JSON): a failed call, retried like a server error and never cached."""
    text = what if isinstance(what, str) else f"{type(what).__name__}: {what}"
    text = " ".join(str(text).split())
    return TransientError(f"the server's reply is not a chat completion ({text[:200]})")


def _connection_error(exc: Exception, config) -> Exception:
    """A refused connection means nothing listens at the address: no retry will change that,
    so it stops the run at once (a dropped or timed-out connection is retried)."""
    seen, cause = set(), exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError) or "connection refused" in str(cause).lower():
            where = config.base_url or f"the {config.provider} API"
            return FatalProviderError(
                f"{config.name}: nothing answers at {where} (connection refused); start the "
                "server or check --base-url")
        cause = cause.__cause__ or cause.__context__
    return TransientError(f"{type(exc).__name__}: {exc}")


def _classify(exc: Exception, status: int | None, who: str) -> Exception:
    if status is None:
        return TransientError(f"{type(exc).__name__}: {exc}")
    if status == 429 or status >= 500 or status == 408:
        return TransientError(f"HTTP {status}: {exc}")
    if status in (401, 403, 404):
        return FatalProviderError(f"{who}: HTTP {status} ({exc}); check the API key, model name and base URL")
    return PermanentError(f"HTTP {status}: {exc}")


class OpenAIChatProvider(Provider):
    """Chat completions through ``openai.OpenAI`` (any OpenAI-compatible base URL)."""

    def __init__(self, config: JudgeConfig, **kwargs):
        super().__init__(config, **kwargs)
        openai = require("openai", "judge", "the openai judge provider")

        self._openai = openai
        key = _api_key(config)
        self.secrets.append(key)
        self._client = openai.OpenAI(api_key=key, base_url=config.base_url,
                                     timeout=config.timeout, max_retries=0)
        # None leaves a setting to the server (some reasoning models reject both).
        self._sampling = {k: v for k, v in (("temperature", config.temperature),
                                            ("max_tokens", config.max_tokens)) if v is not None}

    def _request(self, messages: list[dict]) -> str:
        o = self._openai
        try:
            resp = self._client.chat.completions.create(
                model=self.config.model, messages=messages, **self._sampling, **self.config.extra,
            )
        except o.APITimeoutError as exc:
            raise TransientError(f"{type(exc).__name__}: {exc}") from None
        except o.APIConnectionError as exc:
            raise _connection_error(exc, self.config) from None
        except o.APIStatusError as exc:
            raise _classify(exc, exc.status_code, self.config.name) from None
        except Exception as exc:  # a 200 whose body the client cannot decode (e.g. not JSON)
            raise _unusable(exc) from None
        try:
            choices = resp.choices
            content = choices[0].message.content if choices else None
        except (AttributeError, TypeError, IndexError, KeyError):
            raise _unusable(resp) from None
        if content is None:
            return ""  # an empty reply is then rejected by the parser, and retried
        if not isinstance(content, str):
            raise _unusable(content)
        return content


class AnthropicProvider(Provider):
    """Messages API through ``anthropic.Anthropic``."""

    def __init__(self, config: JudgeConfig, **kwargs):
        super().__init__(config, **kwargs)
        anthropic = require("anthropic", "judge", "the anthropic judge provider")

        self._anthropic = anthropic
        key = _api_key(config)
        self.secrets.append(key)
        self._client = anthropic.Anthropic(api_key=key, base_url=config.base_url,
                                           timeout=config.timeout, max_retries=0)
        # Recent clients dropped the sampling arguments; send temperature only where it exists.
        params = inspect.signature(self._client.messages.create).parameters
        if config.max_tokens is None:
            raise ValueError(f"judge {config.name}: the Anthropic API needs max_tokens; set a number")
        use_t = config.temperature is not None and "temperature" in params
        self._sampling = {"temperature": config.temperature} if use_t else {}

    def _request(self, messages: list[dict]) -> str:
        a = self._anthropic
        try:
            resp = self._client.messages.create(
                model=self.config.model, messages=messages, max_tokens=self.config.max_tokens,
                **self._sampling, **self.config.extra,
            )
        except a.APITimeoutError as exc:
            raise TransientError(f"{type(exc).__name__}: {exc}") from None
        except a.APIConnectionError as exc:
            raise _connection_error(exc, self.config) from None
        except a.APIStatusError as exc:
            raise _classify(exc, exc.status_code, self.config.name) from None
        except Exception as exc:  # a 200 whose body the client cannot decode
            raise _unusable(exc) from None
        try:
            return "".join(getattr(b, "text", "") for b in resp.content
                           if getattr(b, "type", "") == "text")
        except (AttributeError, TypeError):
            raise _unusable(resp) from None


def make_provider(config: JudgeConfig, **kwargs) -> Provider:
    """The provider object for ``config`` (reads the API key from the environment)."""
    cls = OpenAIChatProvider if config.provider == "openai" else AnthropicProvider
    return cls(config, **kwargs)
