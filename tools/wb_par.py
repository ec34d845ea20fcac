#!/usr/bin/env python3
"""wb_par.py: how fast one file's dirty pages reach the disk when one thread asks for the
writeback and when several do, each for its own ranges (issue 27: a run's output is written
buffered into one HDF5 file, and the end of the run waits for the kernel to write it back).

    python3 tools/wb_par.py DIR [GiB] [THREADS...]        e.g. wb_par.py /tmp 8 1 4 8

For each thread count T, a fresh file of GiB:
  fill:  written buffered, 64 MiB per pwrite, from one thread, while T flushers ask every 100 ms
         for the writeback of their share (64 MiB blocks, block b to flusher b % T) with
         sync_file_range(SYNC_FILE_RANGE_WRITE), as oocsolve's flusher does for the whole file;
  drain: then every flusher waits for its share (WAIT_BEFORE | WRITE | WAIT_AFTER), in parallel;
  total: fill + drain, the bytes over it. fdatasync at the end (its time is in the total).
The file's pages are dropped after each case. Prints one line per T.
"""
import ctypes, os, sys, threading, time

libc = ctypes.CDLL("libc.so.6", use_errno=True)
libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
WAIT_BEFORE, WRITE, WAIT_AFTER = 1, 2, 4
BLK = 64 << 20


def case(path, gib, nt):
    nblk = gib * (1 << 30) // BLK
    buf = os.urandom(1 << 20) * 64
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
    written = [0]  # blocks written so far
    stop = threading.Event()

    def flusher(k):
        done = 0  # blocks of this share asked for
        while True:
            last = stop.wait(0.1)
            hi = written[0]
            for b in range(done, hi):
                if b % nt == k:
                    libc.sync_file_range(fd, b * BLK, BLK, WRITE)
            done = hi
            if last:
                break
        for b in range(k, nblk, nt):
            libc.sync_file_range(fd, b * BLK, BLK, WAIT_BEFORE | WRITE | WAIT_AFTER)

    t0 = time.time()
    ths = [threading.Thread(target=flusher, args=(k,)) for k in range(nt)]
    for t in ths:
        t.start()
    for b in range(nblk):
        os.pwrite(fd, buf, b * BLK)
        written[0] = b + 1
    t1 = time.time()
    stop.set()
    for t in ths:
        t.join()
    os.fdatasync(fd)
    t2 = time.time()
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    os.unlink(path)
    by = nblk * BLK
    print("%d flusher(s): fill %.2f s (%.2f GB/s), drain %.2f s, total %.2f s = %.2f GB/s"
          % (nt, t1 - t0, by / (t1 - t0) / 1e9, t2 - t1, t2 - t0, by / (t2 - t0) / 1e9),
          flush=True)


def main():
    d = sys.argv[1]
    gib = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    counts = [int(x) for x in sys.argv[3:]] or [1, 4]
    for nt in counts:
        case(os.path.join(d, "wb_par.bin"), gib, nt)


if __name__ == "__main__":
    main()
