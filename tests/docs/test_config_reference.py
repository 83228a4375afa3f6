"""The configuration reference is generated from the schema and cannot drift from it."""

from __future__ import annotations

from pathlib import Path

from scripts import gen_config_reference as gen

from semproxy.config import schema


def test_the_committed_reference_is_up_to_date() -> None:
    # On failure: python scripts/gen_config_reference.py
    assert gen.stale() == []


def test_every_schema_field_has_an_english_and_a_chinese_note() -> None:
    missing = [key for key in gen.field_keys() if key not in gen.NOTES]
    assert missing == []
    assert all(en.strip() and zh.strip() for en, zh in gen.NOTES.values())


def test_no_note_outlives_its_field() -> None:
    assert sorted(set(gen.NOTES) - set(gen.field_keys())) == []


def test_every_section_has_an_introduction_in_both_languages() -> None:
    classes = {model.__name__ for _, model in gen.sections()}
    assert classes == set(gen.SECTIONS)


def test_every_model_of_the_schema_is_reachable_from_the_root() -> None:
    reached = {model for _, model in gen.sections()}
    models = {obj for obj in vars(schema).values()
              if isinstance(obj, type) and issubclass(obj, schema.Strict)}
    # Shared bases (Strict, RouteSettings) only lend fields to the models below them.
    bases = {m for m in models if any(o is not m and issubclass(o, m) for o in models)}
    assert models - bases == reached


def test_rows_carry_type_default_and_limits_from_the_schema() -> None:
    text = gen.render("en")
    assert ("| `routes[].plugins.ai-proxy-multi.balancer.k` | integer | `3` | >= 1; <= 64 |"
            in text)
    assert ("| `routes[].plugins.ai-proxy-multi.instances[].examples` | list of string or null"
            " | `null` | min items: 1; max items: 64; items: not blank |" in text)
    assert "| `routes[].plugins.ai-proxy-multi.instances[].weight` | integer | required | >= 0 |" \
        in text
    assert "pattern `^[A-Za-z0-9._~-]+$`" in text


def test_aliases_are_used_in_paths() -> None:
    text = gen.render("en")
    assert "`routes[].plugins.ai-proxy-multi.instances`" in text
    assert "ai_proxy_multi" not in text


def test_the_chinese_reference_has_the_same_table_rows() -> None:
    def paths(text: str) -> list[str]:
        return [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| `")]

    assert paths(gen.render("zh")) == paths(gen.render("en"))


def test_stale_finds_and_rewrites_outdated_files(tmp_path: Path) -> None:
    outputs = {"en": tmp_path / "en.md", "zh": tmp_path / "zh.md"}
    outputs["en"].write_text("old\n", encoding="utf-8")
    assert gen.stale(outputs=outputs) == [outputs["en"], outputs["zh"]]
    gen.stale(lambda path, text: path.write_text(text, encoding="utf-8"), outputs=outputs)
    assert gen.stale(outputs=outputs) == []


def test_a_model_is_described_in_the_section_that_holds_it_directly() -> None:
    homes = {model.__name__: path for path, model in gen.sections()}
    assert homes["Embeddings"] == "routes[].plugins.ai-proxy-multi.embeddings"
    assert homes["Auth"] == "routes[].plugins.ai-proxy-multi.instances[].auth"
    text = gen.render("en")
    assert "| `routes[].plugins.ai-proxy-multi.embeddings` | object, see " \
           "`routes[].plugins.ai-proxy-multi.embeddings` or null |" in text
    assert "see `routes[].plugins.ai-proxy-multi.balancer.shadow.embeddings`" not in text
