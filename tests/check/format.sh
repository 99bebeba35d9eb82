#!/usr/bin/env bash
# Holds every C++ and CUDA file the repository tracks to its .clang-format with Debian's
# clang-format-22 (--dry-run -Werror: nothing is rewritten; a file that would
# change fails). `clang-format-22 -i $(git ls-files '*.h' '*.cpp')` fixes a failure.
#
# Usage: format.sh SOURCE_DIR [CLANG_FORMAT]
set -euo pipefail
root=$1
clang_format=${2:-clang-format-22}
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "format check skipped: $clang_format not found (make deps installs clang-format-22)"
  exit 77
fi
cd "$root"
mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu')
"$clang_format" --dry-run -Werror "${files[@]}"
echo "${#files[@]} files formatted as .clang-format says"
