"""The request bodies of `post.lua`, for Python load generators.

`post.lua` (wrk) is the one place the benchmark's prompt sets are written: the
8 repeated prompts and the word lists the varied prompts are made of. This
module reads those lists from the Lua file and builds the same bodies, so a
scenario sends the same prompts whether wrk or the instruction mode drives it.

    bodies = BodyMaker(read_prompt_sets(LUA.read_text()), "varied", "messages", seed=0)
    bodies.body(0)  # the body of request 0
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import orjson

LUA = Path(__file__).resolve().parent / "post.lua"
PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages",
         "responses": "/v1/responses"}
# `local small = { "a", "b" }` in post.lua; strings hold no quotes or escapes.
_TABLE = re.compile(r"local\s+(\w+)\s*=\s*\{([^}]*)\}", re.S)
_STRING = re.compile(r'"([^"\\]*)"')
SETS = ("small", "verbs", "topics", "styles")


def read_prompt_sets(lua: str) -> dict[str, list[str]]:
    """The string tables of post.lua that hold prompts: small, verbs, topics, styles."""
    tables = {m.group(1): _STRING.findall(m.group(2)) for m in _TABLE.finditer(lua)}
    missing = [name for name in SETS if not tables.get(name)]
    if missing:
        raise ValueError(f"post.lua has no string table named {', '.join(missing)}")
    return {name: tables[name] for name in SETS}


def varied_prompt(sets: dict[str, list[str]], n: int) -> str:
    """post.lua's `varied_prompt` for serial `n` (seed + thread offset + serial there)."""
    verbs, topics, styles = sets["verbs"], sets["topics"], sets["styles"]
    t = n // len(verbs)
    s = t // len(topics)
    return (f"{verbs[n % len(verbs)]} {topics[t % len(topics)]} "
            f"{styles[s % len(styles)]} (ref {n})")


def body_for(shape: str, prompt: str, model: str = "auto") -> bytes:
    """A request body of the client protocol `shape`, as post.lua's `body_for` writes it."""
    if shape == "responses":
        return orjson.dumps({"model": model, "input": prompt})
    if shape == "messages":
        return orjson.dumps({"model": model, "max_tokens": 64,
                             "messages": [{"role": "user", "content": prompt}]})
    if shape == "chat":
        return orjson.dumps({"model": model, "messages": [{"role": "user", "content": prompt}]})
    raise ValueError(f"unknown shape {shape!r} (known: {sorted(PATHS)})")


@dataclass(frozen=True)
class BodyMaker:
    """Request `i`'s body for one of post.lua's modes: fixed (the first repeated prompt,
    always), small (the 8 repeated prompts in turn) or varied (a new prompt per request,
    serial `seed + i`)."""

    sets: dict[str, list[str]]
    mode: str
    shape: str = "chat"
    seed: int = 0

    def prompt(self, i: int) -> str:
        if self.mode == "fixed":
            return self.sets["small"][0]
        if self.mode == "small":
            return self.sets["small"][i % len(self.sets["small"])]
        if self.mode == "varied":
            return varied_prompt(self.sets, self.seed + i)
        raise ValueError(f"unknown prompt mode {self.mode!r} (fixed, small, varied)")

    def body(self, i: int) -> bytes:
        return body_for(self.shape, self.prompt(i))
