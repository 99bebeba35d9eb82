#!/usr/bin/env bash
# compute-sanitizer over every registered kernel on a GPU host (docs/hardening.md).
# The GPU host has no LLVM: the kernels are compiled there by the bundle's
# `tilejit` (make bundle), for sm_90a, once per build that sanitize_kernels.py
# lists (`--builds`: variants such as out_proj@tile_fp8 with their --set
# constants, reduced geometry so that racecheck finishes). Each tool runs
# sanitize_kernels.py over every build (sizes with partial tiles), then memcheck
# runs the runtime's own GPU tests (tilejit-gpu-tests "[gpu]": JIT launches,
# weight slots, graph capture and replay).
#
# Usage: [SANITIZE_KERNELS="k ..."] [SANITIZE_TOOLS="memcheck ..."] \
#        tests/e2e/sanitize_gpu.sh [BUNDLE_TARBALL]
#   (default bundle/tilejit-bundle.tar.xz); logs go to $OUT/sanitize or a temp dir.
# Exit: 0 when every run is clean, 1 otherwise, 77 without a GPU or the tool.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle=${1:-$root/bundle/tilejit-bundle.tar.xz}
logs=${OUT:-$(mktemp -d)}/sanitize
mkdir -p "$logs"

cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
[ -n "$cs" ] && [ -x "$cs" ] || { echo "SKIP: compute-sanitizer not found"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU (nvidia-smi -L failed)"; exit 77; }
echo "tool: $cs ($("$cs" --version | grep -i version | tail -1))"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xJf "$bundle" -C "$work" || exit 1
bin=$work/tilejit-bundle/bin
# SANITIZE_KERNELS / SANITIZE_TOOLS: only these kernels / tools (default all).
kernels=${SANITIZE_KERNELS:-$("$bin/tilejit" list --names)} || exit 1
# One line per build: NAME KERNEL [k=v ...]; a kernel without a recipe is
# listed under its own name and fails when run.
builds=$(python3 "$root/tests/e2e/sanitize_kernels.py" --builds $kernels) || exit 1
mkdir -p "$work/ptx"
names=()
while read -r name kernel sets; do
  set_args=()
  for kv in $sets; do set_args+=(--set "$kv"); done
  "$bin/tilejit" compile "$kernel" --arch sm_90a "${set_args[@]}" -o "$work/ptx/$name.ptx" \
    --meta "$work/ptx/$name.json" || exit 1
  names+=("$name")
done <<<"$builds"
echo "kernels: $(echo $kernels)"
echo "builds: ${names[*]}"

status=0
# summarize NAME LOG RC: one line with the tool's own summary and the checks.
summarize() {
  local summary
  summary=$(grep -E "(ERROR|RACECHECK) SUMMARY" "$2" | tail -1 | sed 's/^=* *//')
  echo "$1: exit $3; ${summary:-no summary line}; $(grep -c '^PASS' "$2") checks passed," \
    "$(grep -c '^FAIL' "$2") failed"
  if [ "$3" -ne 0 ]; then
    status=1
    # RUN lines name the build that each report belongs to.
    grep -E "^(RUN |=+ (Invalid|Race|Uninitialized|Error|Warning)|FAIL)" "$2" |
      grep -B1 -E "^(=|FAIL)" | grep -v "^--" | head -40
  fi
}
for tool in ${SANITIZE_TOOLS:-memcheck racecheck initcheck}; do
  timeout 300 "$cs" --tool "$tool" --error-exitcode 99 --print-limit 50 \
    python3 "$root/tests/e2e/sanitize_kernels.py" "$work/ptx" "${names[@]}" >"$logs/$tool.log" 2>&1
  summarize "$tool" "$logs/$tool.log" $?
done
# The tool must be able to fail here: a planted out-of-bounds launch.
timeout 120 "$cs" --tool memcheck --print-limit 5 \
  python3 "$root/tests/e2e/sanitize_kernels.py" --planted "$work/ptx" >"$logs/planted.log" 2>&1
if grep -q "Invalid __global__" "$logs/planted.log"; then
  echo "memcheck, planted out-of-bounds vector_add: reported"
else
  echo "memcheck, planted out-of-bounds vector_add: NOT reported"
  status=1
fi
TILEJIT_CACHE_DIR=$work/cache timeout 50 "$cs" --tool memcheck --error-exitcode 99 \
  "$bin/tilejit-gpu-tests" "[gpu]" >"$logs/gpu-tests-memcheck.log" 2>&1
rc=$?
summarize "memcheck tilejit-gpu-tests [gpu]" "$logs/gpu-tests-memcheck.log" $rc
grep -E "^(All tests passed|test cases:)" "$logs/gpu-tests-memcheck.log" | tail -1
exit $status
