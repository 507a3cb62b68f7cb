"""Python threads hash at once, with the GIL released while Rust works."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import blake3 as upstream
import pytest

import b3accel

BIG = os.urandom(64 << 20)


def test_eight_threads_at_once() -> None:
    inputs = [os.urandom((16 << 20) + i * 1025) for i in range(8)]
    expected = [upstream.blake3(x).digest() for x in inputs]
    barrier = threading.Barrier(8)

    def work(i: int) -> list[bytes]:
        barrier.wait()
        return [b3accel.blake3(inputs[i]).digest() for _ in range(3)]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(8)))
    for i, digests in enumerate(results):
        assert digests == [expected[i]] * 3


def test_shared_hasher_from_two_threads() -> None:
    """Two threads updating one hasher wait for each other (no error, no deadlock in the pool)."""
    data = bytes(1 << 20)
    h = b3accel.blake3(max_threads=2)

    def work() -> None:
        for _ in range(20):
            h.update(data)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert h.digest() == upstream.blake3(bytes(40 << 20)).digest()


def progress_during(call: object) -> int:
    """How many iterations a Python thread makes while `call()` runs in this thread.

    The switch interval is made huge, so this thread never hands the GIL over on a timer: the
    counting thread runs only where this one releases the GIL on its own."""
    count = 0
    stop = False
    started = threading.Event()

    def counter() -> None:
        nonlocal count
        started.set()
        while not stop:
            count += 1
            time.sleep(1e-4)  # hands the GIL back, long enough for the caller to take it

    thread = threading.Thread(target=counter)
    thread.start()
    started.wait()
    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        # The counter's pending wait for the GIL still ran on the old interval: let it pass.
        for _ in range(3):
            time.sleep(0.002)
        before = count
        call()  # type: ignore[operator]
        during = count - before
    finally:
        sys.setswitchinterval(old)
        stop = True
        thread.join()
    return during


def test_gil_released_while_hashing() -> None:
    # The control: Python work that holds the GIL lets the counter make no progress at all.
    assert progress_during(lambda: sum(range(3_000_000))) == 0
    # One call hashing 64 MiB releases the GIL: the counter runs meanwhile.
    assert progress_during(lambda: b3accel.blake3(BIG).digest()) > 0
    assert progress_during(lambda: b3accel.blake3().update(BIG)) > 0
    assert progress_during(lambda: b3accel.subtree(BIG, 0)) > 0


# Run in a child process: before the fix, a thread waiting for the shared hasher held the GIL,
# so the whole interpreter froze (and this script never reached the FIFO's writer).
SHARED_HASHER_WAIT = r"""
import sys, threading, time
import b3accel

fifo = sys.argv[1]
h = b3accel.blake3(b"before ")
holder = threading.Thread(target=lambda: h.update_mmap(fifo))
holder.start()
time.sleep(0.3)  # the holder takes the hasher and blocks until the FIFO has a writer
results = {}
waiters = [
    threading.Thread(target=lambda: results.__setitem__("update", h.update(b" after"))),
    threading.Thread(target=lambda: results.__setitem__("digest", h.digest())),
    threading.Thread(target=lambda: results.__setitem__("copy", h.copy())),
]
for w in waiters:
    w.start()
time.sleep(0.3)  # the waiters wait for the hasher
count = 0
deadline = time.monotonic() + 0.3
while time.monotonic() < deadline:
    count += 1
    time.sleep(0.001)
print("progress", count, "holder alive", holder.is_alive(), flush=True)
with open(fifo, "wb") as f:
    f.write(b"from the fifo")
holder.join()
for w in waiters:
    w.join()
print("digest", h.hexdigest(), "waiters", ",".join(sorted(results)), flush=True)
"""


def test_waiting_for_a_shared_hasher_lets_other_threads_run(tmp_path: Path) -> None:
    """A thread waiting for a hasher that another thread holds (here blocked on a FIFO) waits
    without the GIL: this process's other threads keep running."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    try:
        done = subprocess.run(
            [sys.executable, "-c", SHARED_HASHER_WAIT, str(fifo)], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the interpreter froze while a thread waited for the shared hasher: {e.stdout!r}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    progress = lines[0].split()
    assert progress[0] == "progress" and int(progress[1]) > 0
    # The holder was still blocked on the FIFO (holding the hasher) while the counter ran.
    assert progress[2:] == ["holder", "alive", "True"]
    want = upstream.blake3(b"before from the fifo after").hexdigest()
    assert lines[1].split() == ["digest", want, "waiters", "copy,digest,update"]
