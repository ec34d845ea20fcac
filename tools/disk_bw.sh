#!/usr/bin/env bash
# disk_bw.sh: the disk floor's bandwidths (issue 27, docs/PERFORMANCE.md "The disk floor"),
# measured by dd with direct I/O in a directory on the filesystem that holds the input and the
# output, and printed as the option that passes them to oocsolve:
#
#   tools/disk_bw.sh DIR [GiB]        ->   --disk-bw 823000000,1129000000
#   oocsolve ... $(tools/disk_bw.sh /scratch/me 8) A.h5
#
# Write: GiB (default 4) of zeros with oflag=direct conv=fsync (the page cache bypassed, the
# data on the disk when dd returns). Read: the same file back with iflag=direct. Bytes per
# second are the bytes over dd's wall time (date before and after, so dd's own rounding of its
# summary does not matter). The file is removed on every path. Direct I/O needs a filesystem
# that supports O_DIRECT (dd fails otherwise and this script says so, exit 1); tmpfs (/dev/shm)
# accepts it on recent kernels, and what it measures there is memory copies: the floor of a run
# on /dev/shm. Use a size well above the disk's write cache, and measure in the same session as
# the run the floor is for: shared disks vary.
# The measured figures go to stderr as well, for the log.
set -euo pipefail
DIR=${1:?usage: disk_bw.sh DIR [GiB]}
GIB=${2:-4}
[ -d "$DIR" ] || { echo "disk_bw.sh: $DIR is not a directory" >&2; exit 2; }
case "$GIB" in '' | *[!0-9]*) echo "disk_bw.sh: GiB must be a whole number, not '$GIB'" >&2; exit 2 ;; esac
[ "$GIB" -ge 1 ] || { echo "disk_bw.sh: GiB must be at least 1" >&2; exit 2; }
F=$(mktemp "$DIR/disk_bw.XXXXXX")
trap 'rm -f "$F"' EXIT
BYTES=$((GIB * 1024 * 1024 * 1024))

now() { date +%s.%N; }
rate() { python3 -c "import sys; print(int($BYTES / ($2 - $1)))"; }

t0=$(now)
dd if=/dev/zero of="$F" bs=64M count=$((GIB * 16)) oflag=direct conv=fsync status=none ||
  { echo "disk_bw.sh: direct write to $DIR failed (no O_DIRECT on this filesystem?)" >&2; exit 1; }
t1=$(now)
dd if="$F" of=/dev/null bs=64M iflag=direct status=none ||
  { echo "disk_bw.sh: direct read from $DIR failed" >&2; exit 1; }
t2=$(now)
W=$(rate "$t0" "$t1")
R=$(rate "$t1" "$t2")
echo "disk_bw.sh: $DIR, $GIB GiB: write $W B/s, read $R B/s (dd, direct I/O)" >&2
echo "--disk-bw $R,$W"
