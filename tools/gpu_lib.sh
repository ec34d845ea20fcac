# gpu_lib.sh: the start every GPU-host script shares (sourced from the repository root, after B,
# OUT and LIMIT are set): elapsed and remaining seconds, SKIP tests, the staging fix, and the
# Release sm_90 build of the targets a script needs.
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
left() { echo $((${LIMIT:-560} - $(el))); }
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
# pack NAME: the script's logs ($R) into $OUT/NAME.tgz, then $R removed, so that $OUT holds a few
# files: the device returns at most 8, and with the logs loose which ones came back was chance
# (2026-11-29: the traces of gpu_lu_tile.sh were lost that way). Scripts chained in one call
# each pack under their own name.
pack() { tar czf "$OUT/$1.tgz" -C "$(dirname "$R")" "$(basename "$R")" 2> /dev/null && rm -rf "$R"; }

# The staging bug: libzstd's versioned name may be missing from the staged dependencies.
L=/opt/deps/usr/lib/x86_64-linux-gnu
for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu; do
  [ -e $d/libzstd.so.1 ] && [ -d $L ] && [ ! -e $L/libzstd.so.1.5.4 ] && ln -sf $d/libzstd.so.1 $L/libzstd.so.1.5.4
done

# gpu_build LOG TARGET...: configure (Release, sm_90, $GPU_CMAKE extra flags) and build into $B,
# the log to LOG; on failure print its errors and exit. The CUDA plugin (liboocsolve_cuda.so) is
# built with the targets where the tree has it (an older tree, as gpu_ab.sh's OLD, may not):
# every call that asks for a GPU through the API loads it.
gpu_build() {
  local log=$1 plugin=
  shift
  # shellcheck disable=SC2086
  cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 ${GPU_CMAKE:-} \
    > "$log" 2>&1 || { grep -E "error" "$log" | head -20; exit 1; }
  # (through a file: grep -q closing the pipe early fails it under pipefail)
  cmake --build "$B" --target help > "$B/targets.txt" 2> /dev/null
  grep -qw oocsolve_cuda "$B/targets.txt" && plugin=oocsolve_cuda
  cmake --build "$B" -j"$(nproc)" --target "$@" $plugin >> "$log" 2>&1 ||
    { grep -E "error" "$log" | head -20; exit 1; }
  echo "[$(el) s] built"
}
