"""Counting tokens without the provider: one place, used by admission and count_tokens.

- `input_bound(payload)`: what admission holds for a request's input. Every
  text the provider tokenizes counts its UTF-8 bytes, plus a few tokens per
  message for the chat template's special tokens. A byte-level BPE tokenizer
  (OpenAI's cl100k/o200k, Llama 3, Qwen, Mistral's Tekken, DeepSeek) and a
  SentencePiece one with byte fallback (Llama 2, Gemma) turn every token into at
  least one byte of the text, so a text of n bytes is at most n tokens: the
  bound is never under the real count, which is what makes a budget's overshoot
  at most one request's error whatever the concurrency (docs/en/governance.md).
  It is 2-4x the real count for English (the price: a budget nearly spent
  refuses a request a little earlier; the answer's commit gives the difference
  back at once). Images are held at `image_tokens` each, the most the common
  providers' published formulas charge for one. Parts that no byte count can
  bound (audio, files, server-side tools, a conversation stored upstream) make
  the bound `proven=False`: the governor then lets one such request at a time
  run against a limit that depends on input.
- `estimate_tokens(text)`: UTF-8 bytes / 3, rounded up: a typical count, not a
  bound, for figures that need no guarantee. Against OpenAI's o200k_base tokenizer
  on 1,200 texts (bench/token_estimate.py: 300 each of English prompts, English
  docs, Python source, Chinese docs) its median ratio is 1.32 (95% CI
  1.31-1.33) and it is at or above the real count for 92% of texts (prompts
  99.7%, code 99.3%, docs 88.7%, Chinese 82%). Where it is low, the request's
  commit charges the real count: that shortfall is the budget's overshoot.
- `count_tokens(text)`: the Llama-2 tokenizer that the installed `wordllama`
  package ships (tokenizers/l2_supercat_tokenizer_config.json), run by the HF
  `tokenizers` library wordllama depends on: offline, nothing to download. It
  is at or above o200k_base for 100% of the same texts, median ratio 1.25
  (1.24-1.26; Chinese 1.50), but costs about 3 us per token, too much for every
  request on the event loop;
  it is what `POST /v1/messages/count_tokens` should answer with. It falls back
  to the estimate when the tokenizer cannot be loaded.
tiktoken is not used: it downloads its vocabulary files on first use.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any, NamedTuple

import orjson

log = logging.getLogger("semproxy.governance")
BYTES_PER_TOKEN = 3  # see the module docstring for how it was chosen
IMAGE_TOKENS = 1600  # a high-detail image as OpenAI counts one (at most); no bytes seen
MESSAGE_TOKENS = 4  # each message's role and separators
# Bound constants, generous on purpose: a chat template wraps each message in a
# few special tokens (OpenAI's format: 3-4, Llama 3's: 4-5); a request adds the
# reply's priming tokens; tool definitions add a wrapper text (OpenAI renders them
# in a namespace block, Anthropic adds a tool-use system prompt of about 350 tokens).
BOUND_MESSAGE_TOKENS = 8
BOUND_REQUEST_TOKENS = 16
BOUND_TOOLS_TOKENS = 1024
DEFAULT_IMAGE_TOKENS = 4096  # above GPT-4o/4.1/o-series and Claude's largest image
_UNBOUNDED_PARTS = ("input_audio", "audio", "file", "input_file", "document")
_UPSTREAM_STATE = ("previous_response_id", "conversation")


class InputBound(NamedTuple):
    """Input tokens no provider's byte-level tokenizer exceeds; `proven` is False when
    the request has a part the bound cannot cover (see the module docstring). A named
    tuple: immutable, and cheaper to make than a frozen dataclass (one per request)."""

    tokens: int
    proven: bool = True


def estimate_tokens(text: str) -> int:
    return -(-len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN)


@functools.cache
def _tokenizer() -> Any:
    import wordllama  # the embedding model's package: always installed
    from tokenizers import Tokenizer

    path = Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json"
    return Tokenizer.from_file(str(path))


def count_tokens(text: str) -> int:
    """The Llama-2 tokenizer's count (blocking: ~3 us a token; run long texts off the loop)."""
    try:
        tokenizer = _tokenizer()
    except Exception as exc:
        log.warning("token counter unavailable, estimating instead: %s", exc)
        return estimate_tokens(text)
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def estimate_input(payload: dict[str, Any]) -> int:
    """The input tokens of a Chat Completions body (every protocol is parsed to one):
    message text, tool calls and tool definitions; images at a fixed worst case."""
    tokens = 0
    for message in payload.get("messages") or ():
        if not isinstance(message, dict):
            continue
        tokens += MESSAGE_TOKENS + _content(message.get("content"))
        if message.get("tool_calls"):
            tokens += estimate_tokens(orjson.dumps(message["tool_calls"]).decode())
    if payload.get("tools"):
        tokens += estimate_tokens(orjson.dumps(payload["tools"]).decode())
    return tokens


def _content(content: Any) -> int:
    if isinstance(content, str):
        return estimate_tokens(content)
    tokens = 0
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("type") in ("image_url", "input_image", "image"):
            tokens += IMAGE_TOKENS
        elif isinstance(part.get("text"), str):
            tokens += estimate_tokens(part["text"])
    return tokens


def input_bound(payload: dict[str, Any], image_tokens: int = DEFAULT_IMAGE_TOKENS
                ) -> InputBound:
    """The bound of a Chat Completions body's input (every protocol is parsed to one)."""
    tokens, proven = BOUND_REQUEST_TOKENS, True
    for message in payload.get("messages") or ():
        if not isinstance(message, dict):
            continue
        tokens += BOUND_MESSAGE_TOKENS + _bytes(message.get("role"))
        content = message.get("content")
        if isinstance(content, str):
            tokens += _bytes(content)
        else:
            part_tokens, part_proven = _content_bound(content, image_tokens)
            tokens += part_tokens
            proven = proven and part_proven
        if not _MESSAGE_EXTRAS.isdisjoint(message):
            tokens += _bytes(message.get("name"))
            for key in ("tool_calls", "function_call"):
                if message.get(key):
                    tokens += len(orjson.dumps(message[key]))
    if _PAYLOAD_EXTRAS.isdisjoint(payload):
        return InputBound(tokens, proven)  # text only: nothing below applies
    for key in ("tools", "functions", "response_format", "tool_choice"):
        value = payload.get(key)
        if value and not isinstance(value, str):
            tokens += len(orjson.dumps(value))
    if payload.get("tools") or payload.get("functions"):
        tokens += BOUND_TOOLS_TOKENS
        proven = proven and all(isinstance(t, dict) and t.get("type", "function") == "function"
                                for t in payload.get("tools") or ())
    prompt = payload.get("prompt")  # legacy completions text, or a prompt stored upstream
    if isinstance(prompt, str):
        tokens += _bytes(prompt)
    if isinstance(prompt, dict) or any(payload.get(key) for key in _UPSTREAM_STATE):
        proven = False
    return InputBound(tokens, proven)


# The keys whose absence lets a plain text request skip the rest of the bound.
_MESSAGE_EXTRAS = frozenset({"name", "tool_calls", "function_call"})
_PAYLOAD_EXTRAS = frozenset({"tools", "functions", "response_format", "tool_choice", "prompt",
                             *_UPSTREAM_STATE})


def _bytes(text: Any) -> int:
    if not isinstance(text, str):
        return 0
    # An ASCII text is one byte a character: no encoded copy needed.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _content_bound(content: Any, image_tokens: int) -> tuple[int, bool]:
    if isinstance(content, str):
        return _bytes(content), True
    tokens, proven = 0, True
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("image_url", "input_image", "image"):
            tokens += image_tokens
        elif kind in _UNBOUNDED_PARTS:
            proven = False
        elif isinstance(part.get("text"), str):
            tokens += _bytes(part["text"])
        else:  # an unknown part: its JSON, and no promise
            tokens += len(orjson.dumps(part))
            proven = False
    return tokens, proven
