#!/usr/bin/env bash
# disk_par.sh: what the disk does beyond dd's one direct stream (issue 27: is the floor's write
# bandwidth the disk's, or one stream's?). In DIR, GiB (default 8) each way:
#   bash tools/disk_par.sh DIR [GiB] [STREAMS]
# 1. dd direct, one stream (the floor's figure, tools/disk_bw.sh);
# 2. STREAMS (4) direct writers into one file allocated first (fallocate), each its own range;
# 3. STREAMS direct writers into STREAMS files;
# 4. buffered, one stream, conv=fsync (what a run's writeback gets: the page cache, then the
#    kernel's flusher);
# 5. buffered, STREAMS files at once, each conv=fsync;
# 6. reads: one direct stream, then STREAMS direct readers of one file's ranges.
# Each line: bytes over the wall time of the whole step. Files are removed on every path.
set -euo pipefail
DIR=${1:?usage: disk_par.sh DIR [GiB] [STREAMS]}
GIB=${2:-8}
S=${3:-4}
F=$(mktemp "$DIR/disk_par.XXXXXX")
trap 'rm -f "$F" "$F".*' EXIT
BYTES=$((GIB << 30))
PER=$((GIB * 16 / S)) # 64 MiB blocks per stream
now() { date +%s.%N; }
step() { # LABEL CMD...: runs CMD, prints the rate
  local l=$1 t0 t1
  shift
  sync
  t0=$(now)
  "$@"
  t1=$(now)
  python3 -c "print('%-44s %6.2f GB/s' % ('$l', $BYTES / ($t1 - $t0) / 1e9))"
}
par() { # CMD-TEMPLATE with @i@: S copies at once, @i@ the stream's index
  local i pids=()
  for i in $(seq 0 $((S - 1))); do
    eval "${1//@i@/$i}" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
}
one_direct() { dd if=/dev/zero of="$F" bs=64M count=$((GIB * 16)) oflag=direct conv=fsync status=none; }
step "write, dd direct, 1 stream" one_direct
rm -f "$F"
fallocate -l $BYTES "$F"
par_one() { par "dd if=/dev/zero of=$F bs=64M count=$PER seek=\$((@i@ * PER)) oflag=direct conv=notrunc,fsync status=none"; }
step "write, direct, $S streams, one file" par_one
rm -f "$F"
par_files() { par "dd if=/dev/zero of=$F.@i@ bs=64M count=$PER oflag=direct conv=fsync status=none"; }
step "write, direct, $S streams, $S files" par_files
rm -f "$F".*
buf_one() { dd if=/dev/zero of="$F" bs=64M count=$((GIB * 16)) conv=fsync status=none; }
step "write, buffered + fsync, 1 stream" buf_one
buf_files() { par "dd if=/dev/zero of=$F.@i@ bs=64M count=$PER conv=fsync status=none"; }
step "write, buffered + fsync, $S files" buf_files
rm -f "$F".*
dd if="$F" iflag=nocache count=0 status=none
read_one() { dd if="$F" of=/dev/null bs=64M iflag=direct status=none; }
step "read, dd direct, 1 stream" read_one
read_par() { par "dd if=$F of=/dev/null bs=64M count=$PER skip=\$((@i@ * PER)) iflag=direct status=none"; }
step "read, direct, $S streams, one file" read_par
