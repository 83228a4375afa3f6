"""A whole Chat Completions answer from its event stream, for storing.

Fed the runs of complete events the relay forwards (`providers.sse.sse_events`),
it keeps only what the answer is made of: per choice the role, the text, the
tool calls (arguments joined in order) and the finish reason, plus id, model,
creation time, system fingerprint and the usage of the last event that has it.
Memory is bounded: past `max_bytes` of content the assembler gives up and the
answer is not stored. `result()` is None unless the stream ended properly:
`data: [DONE]` seen, every choice finished, no error event on the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semproxy.protocols.events import DONE, decoded


@dataclass(slots=True)
class _Choice:
    role: str = "assistant"
    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    tools: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: str | None = None


class CompletionAssembler:
    """Feed it the stream's bytes; ask for the completion once it ended."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.failed: str | None = None  # why the answer cannot be stored
        self.done = False
        self._head: dict[str, Any] = {}
        self._choices: dict[int, _Choice] = {}
        self._usage: dict[str, Any] | None = None

    def feed(self, events: bytes) -> None:
        if self.failed is not None or self.done:
            return
        self.size += len(events)
        if self.size > self.max_bytes:
            self._fail("too_large")
            return
        for event in decoded(events):
            if event is DONE:
                self.done = True
                return
            self._event(event)

    def _fail(self, reason: str) -> None:
        self.failed = reason
        self._choices.clear()  # nothing more is kept for an answer that will not be stored

    def _event(self, chunk: dict[str, Any]) -> None:
        if "error" in chunk:
            self._fail("error")
            return
        for name in ("id", "model", "created", "system_fingerprint"):
            if name in chunk and name not in self._head:
                self._head[name] = chunk[name]
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        for part in chunk.get("choices") or ():
            if isinstance(part, dict):
                self._delta(part)

    def _delta(self, part: dict[str, Any]) -> None:
        choice = self._choices.setdefault(int(part.get("index", 0)), _Choice())
        delta = part.get("delta") or {}
        if isinstance(delta.get("role"), str):
            choice.role = delta["role"]
        if isinstance(delta.get("content"), str):
            choice.text.append(delta["content"])
        if isinstance(delta.get("refusal"), str):
            choice.refusal.append(delta["refusal"])
        for call in delta.get("tool_calls") or ():
            self._tool(choice, call)
        if part.get("finish_reason"):
            choice.finish = part["finish_reason"]

    @staticmethod
    def _tool(choice: _Choice, call: dict[str, Any]) -> None:
        slot = choice.tools.setdefault(int(call.get("index", 0)), {
            "id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        if call.get("id"):
            slot["id"] = call["id"]
        function = call.get("function") or {}
        slot["function"]["name"] += function.get("name") or ""
        slot["function"]["arguments"] += function.get("arguments") or ""

    def result(self) -> dict[str, Any] | None:
        """The completion, or None when the stream did not end properly (see above)."""
        if self.failed is not None or not self.done or not self._choices:
            return None
        if any(c.finish is None for c in self._choices.values()):
            return None
        out: dict[str, Any] = {"id": self._head.get("id", ""), "object": "chat.completion",
                               "created": self._head.get("created", 0),
                               "model": self._head.get("model", ""),
                               "choices": [self._message(i, c)
                                           for i, c in sorted(self._choices.items())]}
        if "system_fingerprint" in self._head:
            out["system_fingerprint"] = self._head["system_fingerprint"]
        if self._usage is not None:
            out["usage"] = self._usage
        return out

    @staticmethod
    def _message(index: int, choice: _Choice) -> dict[str, Any]:
        message: dict[str, Any] = {"role": choice.role,
                                   "content": "".join(choice.text) if choice.text else None}
        if choice.refusal:
            message["refusal"] = "".join(choice.refusal)
        if choice.tools:
            message["tool_calls"] = [t for _, t in sorted(choice.tools.items())]
        return {"index": index, "message": message, "finish_reason": choice.finish}
