"""Client protocols and the converters between them.

Inside the gateway every request is a Chat Completions body: a client
protocol parses its own request into one, and a converter carries it to an
upstream that speaks another protocol and its answer (whole or streamed)
back, reporting the token usage it read. The tables are `registry.py`.
"""
