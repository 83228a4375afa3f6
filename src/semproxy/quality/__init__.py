"""Measuring and tuning semantic routing on labelled prompts: `semproxy eval` and `calibrate`.

Nothing here runs on the request path. It drives the gateway's own scorer and
`decide` over a labelled file, so the figures describe what the gateway does.
"""
