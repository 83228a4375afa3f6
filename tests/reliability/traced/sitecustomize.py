"""Loaded by a gateway process started with this folder first on PYTHONPATH: when
TRACED_MEMORY names a file, tracemalloc runs from the start and a thread appends
`monotonic current peak` to it every 2 ms: the Python-level bytes allocated, and
the most allocated at any moment since the sample before. When the file
`<TRACED_MEMORY>.trim` appears, the thread returns the allocator's free memory to
the system (glibc `malloc_trim`) and removes it, so resident size then counts
memory in use rather than what the allocator kept for reuse.

Python-level bytes say what the gateway holds, free of the allocator's habit of
keeping freed memory that blurs resident size, and of other processes' load.
"""

import ctypes
import os
import threading
import time
import tracemalloc


def _sample(path: str) -> None:
    trim = path + ".trim"
    libc = ctypes.CDLL(None)
    with open(path, "a", buffering=1) as out:
        while True:
            if os.path.exists(trim):
                if hasattr(libc, "malloc_trim"):  # glibc; elsewhere resident size as it is
                    libc.malloc_trim(0)
                os.remove(trim)
            current, peak = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            out.write(f"{time.monotonic()} {current} {peak}\n")
            time.sleep(0.002)


if os.environ.get("TRACED_MEMORY"):
    tracemalloc.start()
    threading.Thread(target=_sample, args=(os.environ["TRACED_MEMORY"],), daemon=True).start()
