"""Writing a config file: one writer at a time, atomically, through symlinks.

Every admin write is a read-modify-write of the file, so two writers must never
overlap: an exclusive `flock` on the file's directory orders them, within one
worker (each write opens its own descriptor, and flock locks of two descriptors
exclude each other) and across the processes of `serve --workers N`. The lock
is taken without blocking the event loop (tried, then retried after a short
sleep), so a cancelled request cannot leave a thread holding it.

The new text goes to a temporary file created with O_EXCL under a random name
in the directory of the file (`mkstemp`), so a file or symlink planted under a
predictable name is never written through. It gets the old file's permission
bits, is flushed to disk, then renamed over the old file, and the directory is
flushed too: a reader sees the old text or the new one, never half of each,
and a crash keeps one of them.

A config path that is a symlink (as Kubernetes mounts a ConfigMap, or an
operator pointing `semproxy.yaml` at a file kept elsewhere) stays a symlink:
the write goes to the file it points to, in that file's directory. A directory
that cannot be written (a ConfigMap is mounted read-only) refuses the write
with an OSError naming it; the caller reports it and nothing changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import stat
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from semproxy.config.loader import load_text
from semproxy.config.spec import GatewayConfig

LOCK_WAIT_S = 10.0  # a write holds the lock for milliseconds; this long means a stuck writer
_RETRY_S = 0.01


def target_of(path: Path) -> Path:
    """The file a write really replaces: `path`, or what its symlinks lead to."""
    return Path(os.path.realpath(path))


@contextlib.asynccontextmanager
async def directory_lock(path: Path, wait_s: float = LOCK_WAIT_S) -> AsyncIterator[None]:
    """Hold the exclusive lock of the directory that holds `path`'s target file.

    Raises OSError (EAGAIN) when another writer holds it for longer than `wait_s`.
    """
    fd = os.open(target_of(path).parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OSError(errno.EAGAIN, "another writer holds the config file's lock "
                                                f"for more than {wait_s:.0f}s") from None
                await asyncio.sleep(_RETRY_S)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


async def edit_file(path: Path, edit: Callable[[str], str | None]) -> GatewayConfig | None:
    """Replace the file's text with `edit(text)` once that loads, holding the lock from
    the read to the rename: the new version (not yet applied), or None when `edit`
    has nothing to write.

    OSError when the file cannot be read or written, ConfigError when the new text
    does not validate; whatever `edit` raises propagates. The file is unchanged then.
    """
    async with directory_lock(path):
        text = await asyncio.to_thread(path.read_text, "utf-8")
        # Composing and comparing a large file takes a while: off the event loop.
        new = await asyncio.to_thread(edit, text)
        if new is None:
            return None
        config = await asyncio.to_thread(load_text, new, str(path))
        await asyncio.to_thread(replace_text, path, new)
        return config


def replace_text(path: Path, text: str) -> None:
    """Replace the text of `path`'s target file atomically, keeping its permission bits."""
    target = target_of(path)
    mode = stat.S_IMODE(os.stat(target).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_directory(target.parent)


def _sync_directory(directory: Path) -> None:
    """Flush the rename itself to disk (some filesystems cannot: then it is skipped)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
