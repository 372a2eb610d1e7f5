"""Big answers without the kernel's help: glibc's allocator told to keep
large buffers in the heap.

A candidates answer of 1,000 NUMA hosts is about 2.2 MB of JSON, put
together from its pieces and handed to the socket.  glibc serves every
allocation above its mmap threshold (128 KB at first, raised as such
buffers are freed, and not far) with a fresh mmap() and gives it back with
munmap(), so every answer faulted in its pages anew: measured on a worker
answering the same 2.2 MB query, 2.4 of its 4.2 ms of CPU went to the
kernel, 0.3 with the buffers kept in the heap (and about 5 MB more
resident).  A threshold the operator set (``MALLOC_MMAP_THRESHOLD_`` or
``GLIBC_TUNABLES``) is left as it is; another C library is left alone.
"""

from __future__ import annotations

import ctypes
import os

# mallopt() parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024
# Free memory at the top of the heap beyond this goes back to the system.
TRIM_THRESHOLD = 16 * 1024 * 1024


def keep_big_buffers() -> bool:
    """Raise glibc's mmap and trim thresholds for this process and the
    processes it forks from now on; whether they were set."""
    if ("MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ
            or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", "")):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def give_back() -> bool:
    """Return every free page of glibc's heap to the system (malloc_trim),
    holes in the middle included, which the trim threshold alone never
    returns; whether any was.

    Called in allotment-api's main process before each fork: loading the
    world leaves the heap full of freed rows and lists, resident, and a
    forked worker maps every resident page of its parent, so they would
    count in each worker's resident size for as long as it runs.
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return False
    trim.argtypes = (ctypes.c_size_t,)
    return bool(trim(0))
