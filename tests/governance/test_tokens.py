"""Token counting: the cheap estimate, the offline tokenizer, and a request's input."""

from __future__ import annotations

from semproxy.governance.tokens import IMAGE_TOKENS, count_tokens, estimate_input, estimate_tokens


def test_the_estimate_is_bytes_over_three_rounded_up() -> None:
    assert [estimate_tokens(t) for t in ("", "a", "abc", "abcd", "日本")] == [0, 1, 1, 2, 2]


def test_the_tokenizer_counts_offline_with_the_wordllama_vocabulary() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


def test_a_request_input_counts_text_tools_and_images_not_image_bytes() -> None:
    image = {"url": "data:image/png;base64," + "A" * 99999}
    payload = {"messages": [
        {"role": "system", "content": "x" * 30},
        {"role": "user", "content": [{"type": "text", "text": "y" * 9},
                                     {"type": "image_url", "image_url": image}]}],
        "tools": [{"type": "function", "function": {"name": "f"}}]}
    tools = estimate_tokens('[{"type":"function","function":{"name":"f"}}]')
    assert estimate_input(payload) == 4 + 10 + 4 + 3 + IMAGE_TOKENS + tools
