"""Loading litellm: the background import, the settings it runs with, and the warm-up after it.

This is the only module that imports litellm; `model.litellm_model` and `model.litellm_stream` get the
module from `load_litellm()`. The import (seconds, ~200 MB) runs in a daemon thread started as soon as the
agent is built (`start_background_import`), so it overlaps `initialize` and `session/new`; only a prompt
that arrives before it is done waits for it.

litellm is told to keep off the network at import (`LITELLM_LOCAL_MODEL_COST_MAP`) and to print nothing,
and to leave out work the agent does not use: its token counter (~30 MB of tiktoken tables, loaded on
the first call only to price a response before it exists; the agent reads usage from the provider and
estimates it where none is reported) and the streaming success logging of its sync path.

The first call through litellm pays for lazy imports, pydantic schemas of response types, the SSL
context and the cost lookup: ~0.5 s that later calls do not. The same thread pays it right after the
import with one streamed call through litellm's OpenAI client into an in-memory transport (no socket,
nothing leaves the process), then looks up each session's model (`warm`), so a prompt sent after the
import is as quick as the next one. A prompt waits for this warm-up as it waits for the import: the
warm-up is the work its own call would otherwise do. Then the memory the import freed is handed back to
the system (`malloc_trim`, with glibc).

The cyclic garbage collector is off during the import and the warm-up: they create about a million objects that
live as long as the process, and collecting among them as they come was a quarter of the import's CPU time. After
them the objects alive are frozen (`gc.freeze`: later collections skip them) and collection goes on.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import queue
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import anyio

from coder_agent.model.base import ModelError, StreamSink

log = logging.getLogger(__name__)

WARM_UP_MODEL = "openai/warm-up"
WARM_UP_HOST = "warm-up.invalid"

_start = threading.Lock()
_ready = threading.Event()
_litellm: ModuleType | None = None
_import_error: BaseException | None = None
_models: queue.SimpleQueue[str] = queue.SimpleQueue()
_queued: set[str] = set()
_model_info: dict[str, dict[str, Any] | None] = {}


def start_background_import() -> None:
    """Begin importing (and warming) litellm in a daemon thread, once; returns at once."""
    if _start.acquire(blocking=False):
        threading.Thread(target=_load, name="litellm-import", daemon=True).start()


def warm(model: str) -> None:
    """Get litellm ready for calls to `model` in the background (the import first, if it has not started)."""
    start_background_import()
    if model not in _queued:
        _queued.add(model)
        _models.put(model)


def wait_for_import(timeout: float) -> bool:
    """Block until litellm has loaded and warmed up (starting it if needed); False if it is still loading."""
    start_background_import()
    return _ready.wait(timeout)


async def load_litellm() -> ModuleType:
    """The litellm module, waiting for the background import and warm-up if they are still running."""
    start_background_import()
    if not _ready.is_set():
        await anyio.to_thread.run_sync(_ready.wait, abandon_on_cancel=True)
    if _litellm is None:
        raise ModelError(f"The model library (litellm) failed to load: {_import_error}")
    return _litellm


def model_info(litellm: ModuleType, model: str) -> dict[str, Any] | None:
    """What litellm's model map says about `model` (None when it does not know it), looked up once per model.

    litellm answers an unknown model only after trying its name against every generalisation rule, which
    costs milliseconds a call; the answer does not change while the agent runs.
    """
    if model not in _model_info:
        try:
            info = litellm.get_model_info(model)
        except Exception:
            info = None
        _model_info[model] = dict(info) if info else None
    return _model_info[model]


def _load() -> None:
    collecting = gc.isenabled()
    gc.disable()  # the import makes objects that live for good: see the module docstring
    try:
        _import_and_warm_up()
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
    _release_free_memory()
    _ready.set()
    if _litellm is not None:
        while True:  # the models of sessions, as they open
            model_info(_litellm, _models.get())


def _import_and_warm_up() -> None:
    global _litellm, _import_error
    try:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        litellm.drop_params = True
        litellm.disable_token_counter = True
        litellm.disable_streaming_logging = True
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
            logging.getLogger(name).setLevel(logging.WARNING)
        logging.getLogger("httpx2").addFilter(_not_the_warm_up)
        log.info("litellm %s loaded", _version("litellm"))
    except BaseException as exc:  # reported to the first prompt that needs the model
        _import_error = exc
        log.exception("litellm failed to import")
        return
    try:
        anyio.run(_warm_up, litellm)
    except Exception:
        log.warning("warming up litellm failed; the first model call will be slower", exc_info=True)
    _litellm = litellm


async def _warm_up(litellm: ModuleType) -> None:
    """One streamed call through litellm's OpenAI path, answered by an in-memory transport, read as a turn is."""
    import httpx2
    import openai

    from coder_agent.model.litellm_stream import Gathered

    try:
        from litellm.llms.custom_httpx.http_handler import get_ssl_configuration

        get_ssl_configuration()  # the default SSL context (CA bundle loaded), cached by litellm for every client
    except Exception:
        log.debug("litellm's SSL context was not prepared", exc_info=True)

    async def ignore(_: str) -> None:
        return None

    messages: list[dict[str, Any]] = [{"role": "system", "content": "warm-up"}, {"role": "user", "content": "hi"}]
    tool = {"type": "function", "function": {"name": "noop", "description": "-", "parameters": {"type": "object"}}}
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, headers=_SSE_HEADERS, content=_SSE_BODY))
    async with httpx2.AsyncClient(transport=transport) as http:
        client = openai.AsyncOpenAI(api_key="warm-up", base_url=f"http://{WARM_UP_HOST}/v1", http_client=http)
        response = await litellm.acompletion(
            model=WARM_UP_MODEL,
            messages=messages,
            tools=[tool],
            stream=True,
            stream_options={"include_usage": True},
            max_retries=0,
            client=client,
        )
        gathered = Gathered(litellm, WARM_UP_MODEL, messages)
        turn = await gathered.read(response, StreamSink(on_text=ignore, on_thought=ignore), idle_timeout=10.0)
        if turn.settle is not None:
            await turn.settle()
    model_info(litellm, WARM_UP_MODEL)


def _not_the_warm_up(record: logging.LogRecord) -> bool:
    """Leave out the HTTP client's line about the warm-up's request: it never left the process."""
    return WARM_UP_HOST not in record.getMessage()


def _version(package: str) -> str:
    """The installed version of `package` (litellm has no `__version__`), or "(version unknown)"."""
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "(version unknown)"


def _release_free_memory() -> None:
    """Hand the memory the import and warm-up freed back to the system (glibc keeps it otherwise): ~10 MB RSS."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _sse(chunks: Sequence[dict[str, Any]]) -> bytes:
    base = {"id": "warm-up", "object": "chat.completion.chunk", "created": 0, "model": "warm-up"}
    events = [b"data: " + json.dumps({**base, **chunk}).encode() + b"\n\n" for chunk in chunks]
    return b"".join(events) + b"data: [DONE]\n\n"


_SSE_HEADERS = {"content-type": "text/event-stream"}
_SSE_BODY = _sse(
    [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": None}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "call_0", "type": "function", "function": {"name": "noop"}},
                        ]
                    },
                    "finish_reason": None,
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 2,
                "completion_tokens": 1,
                "total_tokens": 3,
                "prompt_tokens_details": {"cached_tokens": 1},
            },
        },
    ]
)
