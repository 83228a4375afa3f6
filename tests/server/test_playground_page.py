"""The playground page as shipped: no stray markup in the Live hint, every kind of
objective that calibrate takes offered in the Batch tab."""

from __future__ import annotations

from html.parser import HTMLParser
from importlib import resources

from semproxy.quality import calibrate


def page() -> str:
    return (resources.files("semproxy.admin") / "ui" / "index.html").read_text("utf-8")


class PageParts(HTMLParser):
    """Table cells outside any table, the Live hint's text, the objective values."""

    def __init__(self) -> None:
        super().__init__()
        self.tables = 0
        self.stray_cells: list[str] = []
        self.objectives: list[str] = []
        self.in_live_hint = False
        self.live_hint = ""
        self.section = ""
        self.in_objective = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id") or ""
        self.tables += tag == "table"
        if tag in ("th", "td", "tr", "thead") and not self.tables:
            self.stray_cells.append(tag)
        if tag == "select":
            self.in_objective = a.get("id") == "objective"
        if tag == "option" and self.in_objective:
            self.objectives.append(a.get("value") or "")
        if tag == "p" and self.section == "tab-live" and a.get("class") == "hint":
            self.in_live_hint = True

    def handle_endtag(self, tag: str) -> None:
        self.tables -= tag == "table"
        if tag == "p":
            self.in_live_hint = False
        if tag == "select":
            self.in_objective = False

    def handle_data(self, data: str) -> None:
        if self.in_live_hint:
            self.live_hint += data


def parts() -> PageParts:
    parser = PageParts()
    parser.feed(page())
    return parser


def test_no_table_cell_stands_outside_a_table() -> None:
    assert parts().stray_cells == []


def test_the_live_hint_is_one_sentence_about_the_prompt_column() -> None:
    hint = " ".join(parts().live_hint.split())
    assert hint == ("The last 200 requests this gateway worker routed, newest first. The prompt "
                    "column stays empty unless the route has logging.payloads on (then it shows "
                    "the first 500 characters, and add as example makes the prompt an example "
                    "of the instance chosen beside it).")


def test_the_objective_list_offers_every_kind_of_objective_calibrate_takes() -> None:
    offered = parts().objectives
    for value in offered:
        calibrate.objective(value)  # each one is accepted as it is
    kinds = {value.partition("=")[0] for value in offered}
    assert kinds == {"balanced", "accuracy", *calibrate.CONSTRAINED}
    assert "oos_recall=0.9" in offered


