#!/bin/sh
# tilejit as a subproject: a parent project that add_subdirectory()s the source
# tree configures (no CMAKE_SOURCE_DIR assumption in tilejit's CMake files),
# sees tilejit's library targets, and builds the smallest of them.
# Usage: add_subdirectory.sh SOURCE_DIR CMAKE GENERATOR
set -eu
source=$1 cmake=$2 generator=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/parent"
cat >"$work/parent/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(embedder LANGUAGES C CXX)
add_subdirectory("$source" tilejit)
foreach(target TilejitSupport TilejitRuntime TilejitJit TilejitModels)
  if(NOT TARGET \${target})
    message(FATAL_ERROR "add_subdirectory(tilejit) defines no target \${target}")
  endif()
endforeach()
CMAKE
"$cmake" -S "$work/parent" -B "$work/build" -G "$generator" -DTILEJIT_PYTHON=OFF >"$work/log" 2>&1 ||
  { cat "$work/log"; echo "add_subdirectory.sh: configuring the parent failed" >&2; exit 1; }
"$cmake" --build "$work/build" --target TilejitSupport >>"$work/log" 2>&1 ||
  { cat "$work/log"; echo "add_subdirectory.sh: building TilejitSupport failed" >&2; exit 1; }
echo "add_subdirectory(tilejit): configured, TilejitSupport built"
