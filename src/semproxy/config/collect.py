"""What a config build collects: every error with its field path, and the warnings."""

from __future__ import annotations


class Errors:
    """Errors (each with its field path) and warnings collected while a document builds."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.warnings: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path}: {message}")
