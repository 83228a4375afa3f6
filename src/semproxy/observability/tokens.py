"""How token usage is shown: the `tokens` field of the access line and the `kind` label of
`semproxy_tokens_total`, from the `Usage` the converters read."""

from __future__ import annotations

from semproxy.types import Usage

# The kinds both show: prompt (`Usage.input`), completion (`output`) and total; a kind
# that is zero is left out by each (an embeddings answer has no completion and shows none).
PROMPT, COMPLETION, TOTAL = "prompt", "completion", "total"


def token_counts(usage: Usage | None) -> dict[str, int] | None:
    """The access line's `tokens`; None when nothing was counted."""
    if usage is None:
        return None
    given, made = usage.input, usage.output
    if given and made:  # every answer that reports both: no comprehension per line
        return {PROMPT: given, COMPLETION: made, TOTAL: given + made}
    counts = {PROMPT: given, COMPLETION: made, TOTAL: given + made}
    return {kind: n for kind, n in counts.items() if n} or None
