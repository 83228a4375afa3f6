"""The README's promise: both SDKs pointed at the quickstart config, routed on meaning."""

from __future__ import annotations

from pathlib import Path

import anthropic
import openai
import yaml
from tests.conftest import GatewayFactory

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"


async def test_every_sdk_is_routed_on_meaning_by_the_quickstart(gateway: GatewayFactory) -> None:
    gw = await gateway(yaml.safe_load(QUICKSTART.read_text()))
    async with anthropic.AsyncAnthropic(base_url=gw.url, api_key="x", max_retries=0) as claude:
        raw = await claude.messages.with_raw_response.create(
            model="auto", max_tokens=100,
            messages=[{"role": "user", "content": "write a python function that sorts"}])
    message = await raw.parse()
    assert raw.headers["X-AI-Semantic-Route"] == "code"
    assert message.content[0].text.startswith("[code] ")  # type: ignore[union-attr]
    async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0) as c:
        response = await c.responses.create(model="auto",
                                            input="translate this sentence into french")
        models = [m.id async for m in c.models.list()]
        vectors = await c.embeddings.create(model="auto", input="hello")
    assert response.output_text.startswith("[translate] ")
    assert models == ["auto", "code-model", "small-model", "general-model"]
    assert len(vectors.data[0].embedding) == 8
