"""How token usage is shown: the `tokens` field of the access line and the `kind` label of
`semproxy_tokens_total`, from the `Usage` the converters read."""

from __future__ import annotations

from semproxy.types import Usage


def token_counts(usage: Usage | None) -> dict[str, int] | None:
    """prompt, completion and total, each only when it is not zero (an embeddings answer
    has no completion and shows none); None when nothing was counted."""
    if usage is None:
        return None
    counts = {"prompt": usage.input, "completion": usage.output, "total": usage.total}
    return {kind: n for kind, n in counts.items() if n} or None
