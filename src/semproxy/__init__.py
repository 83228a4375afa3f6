"""semproxy: an OpenAI-compatible LLM gateway with semantic load balancing."""

__version__ = "0.1.0"
