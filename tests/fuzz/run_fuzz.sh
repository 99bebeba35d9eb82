#!/bin/sh
# run_fuzz.sh BINARY TARGET SECONDS REGRESSION_DIR [CORPUS_DIR]
# Replays TARGET's regression inputs (earlier crashes, each must now pass),
# then fuzzes TARGET for SECONDS from its seeds plus CORPUS_DIR (kept and
# grown when given, else temporary). A crash leaves its input as
# ./fuzz-crash-TARGET-* and fails. Used by ctest and `make fuzz`.
set -u
bin=$1 target=$2 seconds=$3 regressions=$4 corpus=${5:-}
if [ ! -x "$bin" ]; then
  echo "run_fuzz: $bin is not built (build target tilejit-fuzz-build, or run make fuzz)"
  exit 1
fi
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
"$bin" --target="$target" --make-seeds="$work/seeds" || exit 1

if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
  echo "run_fuzz: replaying $(ls "$regressions" | wc -l) regression inputs of $target"
  "$bin" --target="$target" "$regressions"/* || exit 1
fi

# An input of kernels or pipeline is a whole compile and a ptxas run: the
# constant ranges allow tiles that take LLVM's codegen and ptxas about 50 s
# together in an optimized build (read_bytes with block=65536 for sm_110a),
# minutes under ASan on a loaded machine. Their bound still ends a hang.
case $target in
  kernels | pipeline) timeout=300 ;;
  *) timeout=10 ;;
esac

[ -n "$corpus" ] || corpus=$work/corpus
mkdir -p "$corpus" || exit 1
# -seed fixed so that a ctest failure can be replayed; `make fuzz` passes
# FUZZ_FLAGS (e.g. -seed=0 for a random one) through TILEJIT_FUZZ_FLAGS.
"$bin" --target="$target" -max_total_time="$seconds" -seed=1 -timeout="$timeout" \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="./fuzz-crash-$target-" \
  ${TILEJIT_FUZZ_FLAGS:-} "$corpus" "$work/seeds"
