"""An edit at a path changes exactly one value, and the file written from it (through
config/rewrite.py, as every admin write is) keeps its comments and layout."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from semproxy.admin.limits import new_document
from semproxy.config.edit_paths import PathEdit, apply
from semproxy.config.rewrite import rewrite
from semproxy.errors import BadRequestError

TEXT = """\
# Gateway for the platform team.
routes:
  - id: chat            # the one route
    uri: /v1/*
    plugins:
      ai-proxy-multi:
        instances:
          - {name: big, provider: echo, weight: 1}
consumers:
  - username: alice     # data science
    group_id: team-a
    plugins:
      key-auth: {key: "${ALICE_KEY}"}
      ai-rate-limiting:
        limits:
          - {scope: consumer, total_tokens: 1000, window: minute}  # per key
        # reviewed in March
  - username: bob
    plugins:
      key-auth: {key: bob-key}
consumer_groups:
  - id: team-a
    plugins:
      ai-rate-limiting: {limits: [{money: 500, window: month}]}
governance:
  sqlite_path: /var/lib/semproxy/spend.db   # keep on a volume
"""
ALICE = ("consumers", ("username", "alice"))
BOB = ("consumers", ("username", "bob"))
LIMITS = {"limits": [{"scope": "consumer", "total_tokens": 5000, "window": "minute"}]}


def edited(text: str, edit: PathEdit) -> tuple[str, Any]:
    out = rewrite(text, apply(yaml.safe_load(text), edit))
    assert yaml.safe_load(out) == apply(yaml.safe_load(text), edit)
    return out, yaml.safe_load(out)


def comments(text: str) -> list[str]:
    return [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]


def test_replacing_a_block_value_keeps_every_comment_outside_it() -> None:
    out, doc = edited(TEXT, PathEdit("set", (*ALICE, "plugins", "ai-rate-limiting"), LIMITS))
    assert doc["consumers"][0]["plugins"]["ai-rate-limiting"] == LIMITS
    assert "# Gateway for the platform team." in out and "# keep on a volume" in out
    assert "# data science" in out and "${ALICE_KEY}" in out
    assert "# reviewed in March" in out  # the comment after the block stays where it was


def test_a_new_key_goes_after_the_mapping_s_last_entry() -> None:
    out, doc = edited(TEXT, PathEdit("set", (*BOB, "plugins", "ai-rate-limiting"), LIMITS))
    assert doc["consumers"][1]["plugins"] == {"key-auth": {"key": "bob-key"},
                                              "ai-rate-limiting": LIMITS}
    assert comments(out) == comments(TEXT)


def test_a_missing_mapping_is_added_whole() -> None:
    text = TEXT.replace("    plugins:\n      key-auth: {key: bob-key}\n", "    desc: new\n")
    _, doc = edited(text, PathEdit("set", (*BOB, "plugins", "ai-rate-limiting"), LIMITS))
    assert doc["consumers"][1]["plugins"] == {"ai-rate-limiting": LIMITS}


def test_a_scalar_is_set_in_place() -> None:
    out, doc = edited(TEXT, PathEdit("set", (*ALICE, "group_id"), "team-b"))
    assert doc["consumers"][0]["group_id"] == "team-b"
    assert "group_id: team-b\n" in out


def test_a_flow_value_stays_on_its_line() -> None:
    edit = PathEdit("set", ("consumer_groups", ("id", "team-a"), "plugins", "ai-rate-limiting"),
                    {"limits": [{"money": 900, "window": "month"}]})
    out, _ = edited(TEXT, edit)
    assert "      ai-rate-limiting: {limits: [{money: 900, window: month}]}\n" in out


def test_an_item_is_appended_and_a_missing_list_is_created() -> None:
    group = {"id": "team-b", "plugins": {"ai-rate-limiting": LIMITS}}
    out, doc = edited(TEXT, PathEdit("append", ("consumer_groups",), group))
    assert doc["consumer_groups"][-1] == group and comments(out) == comments(TEXT)
    without = TEXT[:TEXT.index("consumer_groups:")] + TEXT[TEXT.index("governance:"):]
    _, doc = edited(without, PathEdit("append", ("consumer_groups",), group))
    assert doc["consumer_groups"] == [group]


def test_removing_takes_the_lines_of_the_entry_only() -> None:
    out, doc = edited(TEXT, PathEdit("remove", (*ALICE, "group_id")))
    assert "group_id" not in doc["consumers"][0] and "# data science" in out
    out, doc = edited(TEXT, PathEdit("remove", ("consumers", ("username", "bob"))))
    assert [c["username"] for c in doc["consumers"]] == ["alice"]
    assert "# reviewed in March" in out


def test_json_files_stay_json() -> None:
    text = '{"routes": [], "consumers": [{"username": "bob", "plugins": {}}]}\n'
    out, _ = edited(text, PathEdit("set", (*BOB, "plugins", "ai-rate-limiting"), LIMITS))
    import json
    assert json.loads(out)["consumers"][0]["plugins"]["ai-rate-limiting"] == LIMITS


@pytest.mark.parametrize("edit", [
    PathEdit("remove", ("consumers", ("username", "carol"))),
    PathEdit("set", ("governance", "sqlite_path", "deeper"), 1),  # through a scalar
])
def test_what_the_edit_cannot_do_is_refused(edit: PathEdit) -> None:
    with pytest.raises(BadRequestError):
        new_document(yaml.safe_load(TEXT), edit)


def test_a_list_item_is_replaced_whole() -> None:
    group = {"id": "team-a", "desc": "data science",
             "plugins": {"ai-rate-limiting": {"limits": [{"money": 900, "window": "month"}]}}}
    out, doc = edited(TEXT, PathEdit("set", ("consumer_groups", ("id", "team-a")), group))
    assert doc["consumer_groups"] == [group]
    assert comments(out) == comments(TEXT)
