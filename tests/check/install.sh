#!/bin/sh
# The installed C++ package: `cmake --install` into a fresh prefix puts the
# headers, the libraries and tilejitConfig.cmake (+ version file) there. Two
# projects outside the tree find it with find_package(tilejit):
# - tests/check/consumer loads a checkpoint through the models' API;
# - examples/embed, through the embedding API alone: its compile lines name no
#   LLVM or MLIR include directory, and it runs a prefill then decode steps on
#   the interpreter, on the synthetic weights and on the checkpoint.
# Usage: install.sh BUILD_DIR CMAKE GENERATOR CXX CHECKPOINT_DIR SOURCE_DIR
set -eu
build=$1 cmake=$2 generator=$3 cxx=$4 checkpoint=$5 source=$6
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { cat "$work/log" 2>/dev/null; echo "install.sh: $*" >&2; exit 1; }
"$cmake" --install "$build" --prefix "$work/prefix" >"$work/log" 2>&1 || fail "cmake --install failed"
for f in lib/cmake/tilejit/tilejitConfig.cmake lib/cmake/tilejit/tilejitConfigVersion.cmake \
    lib/cmake/tilejit/tilejitTargets.cmake lib/libTilejitModels.a lib/libTilejitBuilder.a \
    lib/libTilejitEmbed.a include/tilejit/embed/Embed.h include/tilejit/embed/Format.h \
    include/tilejit/models/nemotron_h/NemotronH.h include/tilejit/runtime/Jit.h \
    include/tilejit/Dialect/Tile/IR/TileOps.h.inc; do
  [ -f "$work/prefix/$f" ] || fail "not installed: $f"
done

# configure_and_build NAME SOURCE: a project outside the tree against the prefix.
configure_and_build() {
  "$cmake" -S "$2" -B "$work/$1" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$work/log" 2>&1 ||
    fail "configuring $1 with find_package(tilejit) failed"
  "$cmake" --build "$work/$1" >"$work/log" 2>&1 || fail "building $1 failed"
}

configure_and_build consumer "$here/consumer"
out=$("$work/consumer/consumer" "$checkpoint") || fail "the consumer failed: $out"
echo "$out"
[ "$out" = "Mamba layers: 0 2 4 7 9" ] || fail "expected 'Mamba layers: 0 2 4 7 9'"

configure_and_build example "$source/examples/embed"
if grep -E -e '-(I|isystem) ?[^ ]*(llvm|mlir)' "$work/example/compile_commands.json" >"$work/log"; then
  fail "examples/embed compiles with an LLVM or MLIR include directory"
fi
example=$work/example/tilejit-embed-example
# expect_lines NAME PATTERN...: each pattern (grep -E) matches a line of $work/NAME.
expect_lines() {
  name=$1
  shift
  for pattern in "$@"; do
    grep -Eq -e "$pattern" "$work/$name" || { cp "$work/$name" "$work/log"; fail "$name: no line matching '$pattern'"; }
  done
}
"$example" --backend interpreter --tokens 8 --steps 2 >"$work/synthetic" 2>&1 ||
  { cp "$work/synthetic" "$work/log"; fail "the example failed on the synthetic weights"; }
cat "$work/synthetic"
expect_lines synthetic '^engine: interpreter' \
  '^model: embedded synthetic NemotronH \(52 layers: 23 Mamba, 23 MoE, 6 attention\), 1 of its 23 Mamba layer\(s\)' \
  '^prefill: 8 token\(s\) in .* tokens/s' '^decode: 2 step\(s\) of 1 row\(s\) in .* tokens/s' \
  '^prefill output: 21504 values, .*all finite' '^decode output: 2688 values, .*all finite'
# Every Mamba layer of the published-layout checkpoint, two sequences; its
# head_dim of 16 takes ssd_prefill blocks of 16 rows.
"$example" "$checkpoint" --layers 0 --rows 2 --tokens 5 --steps 3 --backend interpreter \
  --set ssd_prefill.block_p=16 >"$work/checkpoint" 2>&1 ||
  { cp "$work/checkpoint" "$work/log"; fail "the example failed on $checkpoint"; }
cat "$work/checkpoint"
expect_lines checkpoint \
  "^model: .*published-pattern \\(10 layers: 5 Mamba, 4 MoE, 1 attention\\), 5 of its 5 Mamba layer\\(s\\): projections FP8 in 3, bf16 in 1, mixed in 1" \
  '^prefill: 10 token\(s\)' '^decode: 3 step\(s\) of 2 row\(s\)' '^decode output: 400 values, .*all finite'
