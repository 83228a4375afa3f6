"""Generated request ids: uuid-length hex, unique within a worker and across forked workers."""

from __future__ import annotations

import os
import re

from semproxy.server.exchange import _ids


def test_ids_are_32_hex_digits_and_never_repeat() -> None:
    ids = [_ids.next() for _ in range(10_000)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_a_forked_worker_draws_its_own_prefix() -> None:
    parent = _ids.next()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report one id and leave at once
        os.write(write_fd, _ids.next().encode())
        os._exit(0)
    os.close(write_fd)
    child = os.read(read_fd, 64).decode()
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert len(child) == 32 and child[:16] != parent[:16]
