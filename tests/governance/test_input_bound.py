"""The input bound: never under a byte-level tokenizer's count, and honest about what it
cannot cover."""

from __future__ import annotations

import random
from pathlib import Path

from semproxy.governance.tokens import count_tokens, estimate_tokens, input_bound

DOCS = Path(__file__).resolve().parents[2] / "docs"


def chat(content: object, **more: object) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": content}], **more}


def test_the_bound_is_at_or_above_the_tokenizer_for_every_text_where_the_estimate_is_not(
) -> None:
    paragraphs = [p for lang in ("en", "zh") for f in sorted((DOCS / lang).glob("*.md"))
                  for p in f.read_text(encoding="utf-8").split("\n\n") if len(p) > 40]
    texts = [*random.Random(3).sample(paragraphs, 300), "ÿ" * 50, "🙂" * 30, "\x00" * 10]
    under_estimate = 0
    for text in texts:
        real = count_tokens(text)
        assert input_bound(chat(text)).tokens >= real + 7, text[:60]  # template included
        under_estimate += estimate_tokens(text) < real
    assert under_estimate > 0  # bytes/3 is not a bound: some texts beat it


def test_images_count_their_worst_case_and_unknown_parts_make_the_bound_unproven() -> None:
    image = chat([{"type": "image_url", "image_url": {"url": "data:" + "A" * 9999}}])
    assert input_bound(image, image_tokens=1000).tokens < 1100 and input_bound(image).proven
    for part in ({"type": "input_audio", "input_audio": {"data": "AAAA"}},
                 {"type": "file", "file": {"file_id": "f"}}, {"type": "mystery"}):
        assert not input_bound(chat([part])).proven
    assert not input_bound(chat("hi", previous_response_id="resp_1")).proven
    assert not input_bound(chat("hi", tools=[{"type": "web_search"}])).proven
    tools = input_bound(chat("hi", tools=[{"type": "function", "function": {"name": "f"}}]))
    assert tools.proven and tools.tokens > 1024
