"""`rewrite`: a config text edited only where the document changed, comments kept."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from semproxy.config.edit import ConfigEditError
from semproxy.config.rewrite import rewrite

TEXT = """\
# top comment
listen: 127.0.0.1:9080   # where clients connect
routes:
  - id: a
    uri: /v1/*
    plugins:
      ai-proxy-multi:
        balancer: {algorithm: semantic, threshold: 0.3}
        # the examples
        instances:
          - name: x
            examples:
              - one
              - two   # second
          - name: y
            catchall: true
"""


def edited(change: Any) -> str:
    new = yaml.safe_load(TEXT)
    change(new)
    return rewrite(TEXT, new)


def instances(doc: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = doc["routes"][0]["plugins"]["ai-proxy-multi"]["instances"]
    return found


def test_an_unchanged_document_leaves_the_text_as_it_is() -> None:
    assert rewrite(TEXT, yaml.safe_load(TEXT)) == TEXT


def test_a_changed_scalar_keeps_the_comment_on_its_line() -> None:
    out = edited(lambda d: d.update(listen="127.0.0.1:9999"))
    assert out == TEXT.replace("127.0.0.1:9080", "127.0.0.1:9999")


def test_an_appended_example_is_one_new_line_after_the_last() -> None:
    out = edited(lambda d: instances(d)[0]["examples"].append("three"))
    assert out == TEXT.replace("- two   # second\n", "- two   # second\n              - three\n")


def test_a_removed_list_item_and_a_removed_key_are_their_lines_removed() -> None:
    def change(d: dict[str, Any]) -> None:
        del instances(d)[0]["examples"][0]
        del instances(d)[1]["catchall"]
    out = edited(change)
    assert out == TEXT.replace("              - one\n", "").replace(
        "            catchall: true\n", "")


def test_an_added_key_goes_after_the_mapping_at_its_indentation() -> None:
    out = edited(lambda d: instances(d)[1].update(weight=2, options={"model": "m"}))
    assert out == TEXT + "            weight: 2\n            options:\n              model: m\n"


def test_a_flow_mapping_that_gains_a_key_is_written_again_in_flow_style() -> None:
    out = edited(lambda d: d["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"].update(k=3))
    assert out == TEXT.replace("threshold: 0.3}", "threshold: 0.3, k: 3}")


@pytest.mark.parametrize("value", ["yes", "nel\u0085x", "a: b", "line\u2028sep", "c1\u009f",
                                   "#hash", "", "123", 1e-05, True, None])
def test_values_yaml_would_misread_read_back_exactly(value: Any) -> None:
    def change(d: dict[str, Any]) -> None:
        instances(d)[0]["examples"].append(value)
        instances(d)[1]["note"] = value
    new = yaml.safe_load(TEXT)
    change(new)
    assert yaml.safe_load(rewrite(TEXT, new)) == new
    got = yaml.safe_load(rewrite(TEXT, new))
    assert type(instances(got)[1]["note"]) is type(value)


def test_a_new_route_is_appended_in_block_style() -> None:
    route = {"id": "b", "uri": "/v2/*", "plugins": {"ai-proxy-multi": {
        "instances": [{"name": "z", "provider": "echo"}]}}}
    out = edited(lambda d: d["routes"].append(route))
    assert out.startswith(TEXT)
    assert out[len(TEXT):] == ("  - id: b\n    uri: /v2/*\n    plugins:\n      ai-proxy-multi:\n"
                               "        instances:\n        - name: z\n          provider: echo\n")


def test_the_last_route_removed_leaves_an_empty_list() -> None:
    text = "listen: 127.0.0.1:0\nroutes:\n- id: a\n  uri: /x\n# end\n"
    out = rewrite(text, {"listen": "127.0.0.1:0", "routes": []})
    assert yaml.safe_load(out) == {"listen": "127.0.0.1:0", "routes": []}
    assert out.endswith("# end\n")


def test_a_json_file_keeps_its_layout_outside_the_change() -> None:
    doc = yaml.safe_load(TEXT)
    text = json.dumps(doc, indent=2)
    new = copy.deepcopy(doc)
    instances(new)[0]["examples"].append("nel\u0085x")
    out = rewrite(text, new, "gateway.json")
    assert json.loads(out) == new
    assert out.replace('"two", "nel\\u0085x"', '"two"') == text


def test_anchors_are_refused_rather_than_unshared() -> None:
    text = "a: &x {k: 1}\nb: *x\n"
    with pytest.raises(ConfigEditError, match="anchors"):
        rewrite(text, {"a": {"k": 2}, "b": {"k": 1}})
