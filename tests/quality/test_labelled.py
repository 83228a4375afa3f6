import pytest

from semproxy.quality.labelled import LabelledDataError, check_labels, parse_lines


def test_prompt_messages_and_null_lines() -> None:
    items = parse_lines([
        '{"prompt": " hello ", "instance": "a"}',
        "",
        '{"messages": [{"role": "user", "content": "first"}, {"role": "assistant",'
        ' "content": "x"}, {"role": "user", "content": [{"type": "text", "text": "last"}]}],'
        ' "instance": null}',
    ])
    assert [(i.text, i.instance) for i in items] == [("hello", "a"), ("last", None)]


@pytest.mark.parametrize(("line", "message"), [
    ('{"prompt": "x"}', "'instance' is required"),
    ('{"prompt": "x", "instance": 3}', "string or null"),
    ('{"instance": "a"}', "'prompt'"),
    ("[1]", "JSON object"),
    ("{oops", "not valid JSON"),
])
def test_bad_lines_name_their_line(line: str, message: str) -> None:
    with pytest.raises(LabelledDataError, match=message) as info:
        parse_lines(['{"prompt": "ok", "instance": null}', line], "f.jsonl")
    assert "f.jsonl:2" in str(info.value)


def test_unknown_instance_is_refused() -> None:
    items = parse_lines(['{"prompt": "x", "instance": "typo"}'])
    with pytest.raises(LabelledDataError, match="typo"):
        check_labels(items, ["a", "fallback"], "f.jsonl")
