"""A local, scripted stand-in for an LLM judge, for offline tests and demos.

:class:`ScriptedJudgeServer` is a small HTTP server on 127.0.0.1 (stdlib ``http.server`` in a
background thread) that speaks just enough of two APIs for the real clients to talk to it:

* OpenAI chat completions: ``POST /v1/chat/completions`` (use ``server.openai_base_url``);
* Anthropic messages: ``POST /v1/messages`` (use ``server.anthropic_base_url``).

What it answers is decided by a *responder*; :class:`RubricScript` is a responder that reads the
concept name and item text out of the judge prompts and replies with scripted rubric scores, and
can inject faults per cell: malformed JSON, out-of-range values, HTTP 429/500 and replies slower
than the client's timeout.  The server counts requests, so tests can check that a cached rerun
makes none.  Nothing here contacts the network beyond the loopback interface.

Example::

    with ScriptedJudgeServer(RubricScript(items, concept_scores, strengths)) as server:
        judge = JudgeConfig("openai", "scripted", base_url=server.openai_base_url)
        run_judgments(items_df, concepts, judge)
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd

__all__ = ["Reply", "ScriptedJudgeServer", "RubricScript", "FAULTS"]

FAULTS = ("ok", "fenced", "malformed", "prose", "out_of_range", "wrong_type", "http400", "http429", "http500", "slow")


@dataclass(frozen=True)
class Reply:
    """What the fake server sends back: reply ``text`` with HTTP ``status`` after ``delay`` seconds.

    ``body`` (with ``content_type``) replaces the whole HTTP body, e.g. an HTML error page
    served with status 200.  ``echo_auth`` makes an error reply quote the request's
    ``Authorization`` and ``x-api-key`` headers, as careless proxies do (to test redaction).
    """

    text: str = ""
    status: int = 200
    delay: float = 0.0
    body: bytes | None = None
    content_type: str = "application/json"
    echo_auth: bool = False


def _message_text(message: dict) -> str:
    content = message.get("content", "")
    if isinstance(content, list):  # Anthropic-style content blocks
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/chat/completions"):
            api = "openai"
        elif path.endswith("/messages"):
            api = "anthropic"
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        reply = self.server.owner._handle(api, body)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.body is not None:
            self._send_raw(reply.status, reply.body, reply.content_type)
            return
        if reply.status != 200:
            message = f"scripted HTTP {reply.status}"
            if reply.echo_auth:
                message += (f"; request headers: Authorization={self.headers.get('authorization')} "
                            f"x-api-key={self.headers.get('x-api-key')}")
            if api == "openai":
                payload = {"error": {"message": message, "type": "scripted", "code": reply.status}}
            else:
                payload = {"type": "error", "error": {"type": "rate_limit_error" if reply.status == 429 else "api_error",
                                                      "message": message}}
            self._send(reply.status, payload, retry_after=reply.status == 429)
            return
        model = body.get("model", "scripted")
        if api == "openai":
            payload = {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
                       "model": model,
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                                    "finish_reason": "stop", "logprobs": None}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        else:
            payload = {"id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
                       "content": [{"type": "text", "text": reply.text}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        self._send(200, payload)

    def _send(self, status: int, payload: dict, retry_after: bool = False) -> None:
        self._send_raw(status, json.dumps(payload).encode("utf-8"), "application/json", retry_after)

    def _send_raw(self, status: int, data: bytes, content_type: str, retry_after: bool = False) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            if retry_after:
                self.send_header("retry-after", "0")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the slow reply was ready


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedJudgeServer


class ScriptedJudgeServer:
    """Fake OpenAI-compatible and Anthropic endpoints on 127.0.0.1 (port 0 = any free port).

    ``responder(api, messages, attempt) -> Reply`` decides each answer; ``attempt`` counts the
    earlier requests whose first message (the judge prompt) was the same.
    """

    def __init__(self, responder: Callable[[str, list[dict], int], Reply], port: int = 0):
        self.responder = responder
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.owner = self
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = defaultdict(int)
        self.log: list[dict] = []
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.log)

    def _handle(self, api: str, body: dict) -> Reply:
        messages = body.get("messages", [])
        first = _message_text(messages[0]) if messages else ""
        with self._lock:
            attempt = self._attempts[first]
            self._attempts[first] += 1
            self.log.append({"api": api, "model": body.get("model"), "prompt": first, "turns": len(messages)})
        try:
            return self.responder(api, messages, attempt)
        except Exception as exc:  # a broken script should surface as a server error, not a hang
            return Reply(text=f"responder error: {exc}", status=500)

    def start(self) -> ScriptedJudgeServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedJudgeServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


_NAME = re.compile(r"^- Name: (.*)$", re.MULTILINE)
_ITEM = re.compile(r"<<<BEGIN ITEM (\w+)>>>\n(.*?)\n<<<END ITEM \1>>>", re.DOTALL)


class RubricScript:
    """Responder that answers the rubric prompts from scripted scores, with optional faults.

    ``items``: item_id -> item text (how the script recognises an item in a prompt).
    ``concept_scores``: DataFrame indexed by concept with W, K, N; ``strengths``: items x
    concepts S.  A cell may hold a list of values, used by successive valid replies (the last
    repeats), to script disagreement between samples.  ``faults`` maps ``(item_id, concept)``
    (``item_id`` None for concept prompts) to a list of fault names from :data:`FAULTS`, one per
    request to that cell; the last one repeats.  ``"slow"`` answers correctly after
    ``slow_delay`` seconds.
    """

    def __init__(self, items: Mapping[str, str], concept_scores: pd.DataFrame, strengths: pd.DataFrame,
                 faults: Mapping[tuple[str | None, str], Sequence[str]] | None = None, slow_delay: float = 2.0):
        self._by_text = {str(text).strip(): str(iid) for iid, text in items.items()}
        self.concept_scores = concept_scores
        self.strengths = strengths
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        for key, seq in self.faults.items():
            bad = [f for f in seq if f not in FAULTS]
            if bad or not seq:
                raise ValueError(f"faults for {key}: unknown or empty fault list {seq}; use {FAULTS}")
        self.slow_delay = slow_delay
        self._valid = defaultdict(int)
        self._lock = threading.Lock()

    @staticmethod
    def _pick(value, k: int):
        if isinstance(value, list | tuple):
            return value[min(k, len(value) - 1)]
        return value

    def __call__(self, api: str, messages: list[dict], attempt: int) -> Reply:
        prompt = _message_text(messages[0])
        concept = _NAME.search(prompt).group(1).strip()
        m = _ITEM.search(prompt)
        item = self._by_text[m.group(2).strip()] if m else None
        seq = self.faults.get((item, concept), ["ok"])
        fault = seq[min(attempt, len(seq) - 1)]
        if fault == "http429":
            return Reply(status=429)
        if fault == "http500":
            return Reply(status=500)
        if fault == "http400":
            return Reply(status=400)
        with self._lock:
            k = self._valid[(item, concept)]
            if fault in ("ok", "fenced"):
                self._valid[(item, concept)] += 1
        if item is None:
            row = self.concept_scores.loc[concept]
            obj = {"welfare_alignment_1_to_5": int(self._pick(row["W"], k)),
                   "marginal_improvement_cost": self._pick(row["K"], k),
                   "measurement_noise": self._pick(row["N"], k),
                   "rationale": f"scripted scores for {concept}"}
            bad_key, bad_value = "welfare_alignment_1_to_5", 9
        else:
            obj = {"measurement_strength_0_to_3": int(self._pick(self.strengths.loc[item, concept], k)),
                   "rationale": f"scripted strength of {item} on {concept}"}
            bad_key, bad_value = "measurement_strength_0_to_3", 7
        text = json.dumps(obj)
        if fault == "fenced":
            return Reply(text=f"```json\n{text}\n```")
        if fault == "malformed":
            return Reply(text=text[:-1] + ",")
        if fault == "prose":
            return Reply(text=f"Here is my assessment: {text}")
        if fault == "out_of_range":
            return Reply(text=json.dumps({**obj, bad_key: bad_value}))
        if fault == "wrong_type":
            return Reply(text=json.dumps({**obj, bad_key: str(obj[bad_key])}))
        if fault == "slow":
            return Reply(text=text, delay=self.slow_delay)
        return Reply(text=text)
