#!/bin/sh
# Checks what the package's two libraries export (their defined dynamic
# symbols): the module PyInit__tilejit alone, the core the tilejit::python API
# alone (module/exports.map, core/exports.map), and neither a GNU unique symbol,
# which the dynamic linker binds across every library of the process.
# Usage: check-exports.sh MODULE CORE
set -eu
module=$1
core=$2
status=0
extra=$(nm -D --defined-only "$module" | awk '{print $3}' | grep -vx PyInit__tilejit || true)
if [ -n "$extra" ]; then
  echo "check-exports.sh: $module exports more than PyInit__tilejit:" >&2
  echo "$extra" | c++filt | head -20 >&2
  status=1
fi
extra=$(nm -D --defined-only -C "$core" | cut -d' ' -f3- |
  grep -vE '^((typeinfo|typeinfo name|vtable) for )?tilejit::python::' || true)
if [ -n "$extra" ]; then
  echo "check-exports.sh: $core exports more than tilejit::python:" >&2
  echo "$extra" | head -20 >&2
  status=1
fi
for lib in "$module" "$core"; do
  if readelf --dyn-syms -W "$lib" | awk '$5 == "UNIQUE" && $7 != "UND"' | grep -q .; then
    echo "check-exports.sh: $lib defines GNU unique symbols:" >&2
    readelf --dyn-syms -W "$lib" | awk '$5 == "UNIQUE" && $7 != "UND" {print $8}' | c++filt >&2
    status=1
  fi
done
[ $status = 0 ] && echo "exports: $(basename "$module") PyInit__tilejit;" \
  "$(basename "$core") $(nm -D --defined-only "$core" | wc -l) tilejit::python symbols"
exit $status
