"""`echo`: the built-in provider for demos and dry runs; it never touches the network.

Its targets are `echo://<instance>/...`, which the transport serves in process
(`transport/echo.py`): a chat answer that names the instance and quotes the
prompt, and hash-derived vectors for a client's embeddings requests. It cannot
be the embeddings provider of semantic routing: its vectors carry no meaning.
"""

from semproxy.providers.base import Provider


class EchoProvider(Provider):
    name = "echo"
    base_url = "echo://local"

    @classmethod
    def has_embeddings(cls) -> bool:
        return False

    def base(self, endpoint: str | None) -> str:
        return f"echo://{self.instance}"
