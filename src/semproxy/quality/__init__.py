"""Measuring and tuning semantic routing on labelled prompts: `eval`, `calibrate`, `tune`.

Nothing here runs on the request path. It drives the gateway's own scorer and
`decide` over a labelled file, so the figures describe what the gateway does.
Every figure is a `Rate` (count, n, 95% interval) and fitted choices are judged
by k-fold cross-validation, never on the prompts they were fitted on.
"""
