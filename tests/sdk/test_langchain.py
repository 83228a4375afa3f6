"""`langchain-openai`'s ChatOpenAI, pointed at the gateway, invoked and streamed."""

from __future__ import annotations

from langchain_openai import ChatOpenAI

from semproxy.admin.run import RunningGateway


def model(gw: RunningGateway, **extra: object) -> ChatOpenAI:
    return ChatOpenAI(base_url=gw.url + "/v1", api_key="unused", model="m",  # type: ignore[arg-type]
                      max_retries=0, **extra)


async def test_chat_openai_invokes_and_streams_through_the_gateway(gw: RunningGateway) -> None:
    answer = await model(gw).ainvoke("hello there")
    pieces = [chunk.content async for chunk in model(gw).astream("stream chunks:3")]
    assert answer.content == "[up] a-model: hello there"
    assert "".join(str(p) for p in pieces) == "[up] a-model: stream chunks:3"


async def test_chat_openai_over_the_responses_api(gw: RunningGateway) -> None:
    answer = await model(gw, use_responses_api=True).ainvoke("hello there")
    assert answer.text == "[up] a-model: hello there"
