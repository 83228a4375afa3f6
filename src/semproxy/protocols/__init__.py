"""Client protocols the gateway speaks besides OpenAI Chat Completions.

Inside the gateway every request is a Chat Completions body: an inbound
protocol turns its own request into one (`parse`), and turns the upstream's
Chat Completions answer, whole or streamed, back into its own shape
(`reply`, `stream`), errors included. Chat Completions itself passes through
untouched, so the common case pays nothing for the others.
"""
