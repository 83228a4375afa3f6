"""scripts/check_docs.py: English pages need a Chinese twin with the same heading outline."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripts import check_docs


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    write(tmp_path / "en/guide.md", "# Guide\n\n## Install\n\ntext\n\n## Run\n\n### Flags\n")
    write(tmp_path / "zh/guide.md", "# 指南\n\n## 安装\n\n文字\n\n## 运行\n\n### 参数\n")
    return tmp_path


def test_matching_pages_pass(docs: Path) -> None:
    assert check_docs.check_translations(docs) == []
    assert check_docs.main([str(docs)]) == 0


def test_a_missing_chinese_page_fails(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(docs / "en/extra.md", "# Extra\n")
    problems = check_docs.check_translations(docs)
    assert len(problems) == 1
    assert "no Chinese counterpart" in problems[0] and "extra.md" in problems[0]
    assert check_docs.main([str(docs)]) == 1
    assert "no Chinese counterpart" in capsys.readouterr().err


def test_a_missing_heading_fails(docs: Path) -> None:
    write(docs / "zh/guide.md", "# 指南\n\n## 安装\n\n## 运行\n")
    [problem] = check_docs.check_translations(docs)
    assert "heading structure differs" in problem
    assert "h3: 1" in problem  # the English outline is shown


def test_headings_at_other_levels_fail_even_with_the_same_count(docs: Path) -> None:
    write(docs / "zh/guide.md", "# 指南\n\n## 安装\n\n### 运行\n\n### 参数\n")
    assert len(check_docs.check_translations(docs)) == 1


def test_headings_in_another_order_fail(docs: Path) -> None:
    write(docs / "zh/guide.md", "# 指南\n\n## 安装\n\n### 参数\n\n## 运行\n")
    assert len(check_docs.check_translations(docs)) == 1


def test_pages_in_subfolders_are_paired(docs: Path) -> None:
    write(docs / "en/deep/page.md", "# Page\n")
    assert "no Chinese counterpart" in check_docs.check_translations(docs)[0]
    write(docs / "zh/deep/page.md", "# 页面\n")
    assert check_docs.check_translations(docs) == []


def test_hashes_inside_code_fences_are_not_headings() -> None:
    text = "# Title\n\n```sh\n# a shell comment\n## another\n```\n\n## Real\n"
    assert check_docs.heading_levels(text) == [1, 2]


def test_hash_without_space_is_not_a_heading() -> None:
    assert check_docs.heading_levels("#hashtag\n#\n# Yes\n") == [1]


def test_the_repository_docs_pass() -> None:
    assert check_docs.check_translations(check_docs.ROOT / "docs") == []
