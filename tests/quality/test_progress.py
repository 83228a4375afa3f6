import io

from semproxy.quality.progress import ProgressBar


def test_bar_redraws_one_line_and_ends_it() -> None:
    out = io.StringIO()
    bar = ProgressBar(4, "eval", out, force=True)
    bar.advance(2)
    bar.advance(5)  # never past the total
    bar.close()
    assert out.getvalue().endswith("\reval [" + "#" * 30 + "] 4/4\n")
    assert "] 2/4" in out.getvalue()


def test_bar_is_silent_when_not_on_a_terminal() -> None:
    out = io.StringIO()
    bar = ProgressBar(4, "eval", out)
    bar.advance(4)
    bar.close()
    assert out.getvalue() == ""
