#!/usr/bin/env bash
# Diagnoses issue 32's import-order crash on the GPU host: builds the Python module
# from the GPU kit (as the kit does, and in variants that test one hypothesis each),
# imports tilejit and torch in both orders under faulthandler, and on a crash prints
# a native backtrace, the libraries' initialization order and the dynamic-linker
# bindings between tilejit's libraries and the others.
# Usage: tests/e2e/python_import_order.sh [KIT] [PYTHON]
#   KIT: a kit folder or tilejit-python-gpu-kit.tar.xz (default
#   bundle/tilejit-python-gpu-kit.tar.xz); PYTHON: default python3.
# Stdout is a short report; every log goes to $WORK/logs (default /tmp/tj-import),
# packed into $OUT/import_order_logs.tar.xz when OUT is set.
# Exit status: 0 when the module as the kit builds it imports in both orders,
# 1 when it crashes or fails in either, 2 when the host cannot run the check.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kit_arg=${1:-$root/bundle/tilejit-python-gpu-kit.tar.xz}
python=${2:-python3}
work=${WORK:-/tmp/tj-import}
logs=$work/logs
rm -rf "$work" && mkdir -p "$logs" "$work/base"
[ -n "${OUT:-}" ] && trap 'tar -C "$work" -cJf "$OUT/import_order_logs.tar.xz" logs' EXIT

if [ -d "$kit_arg" ]; then
  cp -a "$kit_arg"/. "$work/base/"
elif [ -f "$kit_arg" ]; then
  tar -xJf "$kit_arg" -C "$work/base" --strip-components=1 || exit 2
else
  echo "python_import_order.sh: no kit at $kit_arg" >&2
  exit 2
fi
# A kit the session already built the module in: every variant builds its own.
rm -f "$work"/base/module/*.o "$work"/base/tilejit/_tilejit*.so
core=tilejit/libtilejit_python.so
[ -f "$work/base/$core" ] || { echo "python_import_order.sh: no $core in the kit" >&2; exit 2; }

# --- The host -------------------------------------------------------------------
pybind11_version() { # FOLDER holding pybind11/: version and internals version
  local h=$1/pybind11/detail
  [ -f "$h/common.h" ] || { echo "none"; return; }
  local v
  v=$(grep -hE '#define PYBIND11_VERSION_(MAJOR|MINOR|PATCH) ' "$h/common.h" |
    awk '{printf "%s.", $3}')
  echo "${v%.} (internals: $(grep -hE 'define PYBIND11_INTERNALS_VERSION [0-9]' \
    "$h/internals.h" | awk '{print $NF}' | paste -sd/))"
}
torch_include=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))' 2>/dev/null) || {
  echo "python_import_order.sh: $python cannot import torch" >&2
  exit 2
}
pip_include=$("$python" -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null || true)
{
  echo "python: $("$python" -c 'import sys; print(sys.version.split()[0], sys.executable, "dlopen flags", sys.getdlopenflags())')"
  echo "torch: $("$python" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI)' 2>&1 | tail -1)"
  echo "torch's pybind11: $(pybind11_version "$torch_include")"
  echo "pip pybind11: ${pip_include:-none}${pip_include:+ $(pybind11_version "$pip_include")}"
  echo "g++: $(${CXX:-g++} --version | head -1); glibc: $(ldd --version | head -1)"
  echo "torch's compiler: $("$python" -c 'import torch; print(torch.__config__.show())' 2>&1 |
    grep -iE 'GCC|compiler|CXX_FLAGS' | head -3 | tr '\n' ' ' | cut -c1-400)"
} | tee "$logs/host.txt"

# --- The module in variants -------------------------------------------------------
# kit:          the kit's own build-module.sh and sources (what a user gets)
# shared-pip:   this tree's build-module.sh (the module exports PyInit__tilejit
#               alone) with pybind11's internals shared with other modules, pybind11
#               from pip: crashes here, not in kit, point at pybind11's internals
# shared-torch: the same with torch's own pybind11 headers: one layout on both sides
# isolated-pip: this tree's build-module.sh, the internals kept to the module (the fix)
variants="kit shared-torch isolated-pip"
[ -n "$pip_include" ] && variants="kit shared-pip shared-torch isolated-pip"
variants=${VARIANTS:-$variants}
build_variant() { # NAME PYBIND11_INCLUDE FLAGS
  local dir=$work/$1
  mkdir -p "$dir"
  cp -al "$work/base/." "$dir/"
  if [ "$1" != kit ]; then
    cp --remove-destination "$root/python_bindings/gpu/build-module.sh" "$dir/"
    [ -f "$dir/module/exports.map" ] || cp "$root/python_bindings/module/exports.map" "$dir/module/"
  fi
  PYBIND11_INCLUDE=$2 TILEJIT_MODULE_CXXFLAGS=$3 sh "$dir/build-module.sh" "$python" \
    >"$logs/build-$1.txt" 2>&1
}
declare -A built
for v in $variants; do
  case $v in
    kit) build_variant kit "" "" ;;
    shared-pip) build_variant "$v" "$pip_include" -DTILEJIT_SHARE_PYBIND11_INTERNALS ;;
    shared-torch) build_variant "$v" "$torch_include" -DTILEJIT_SHARE_PYBIND11_INTERNALS ;;
    isolated-pip) build_variant "$v" "${pip_include:-$torch_include}" \
      '-DPYBIND11_COMPILER_TYPE="_tilejit"' ;;
  esac
  built[$v]=$?
  echo "build $v: rc ${built[$v]} ($(tail -1 "$logs/build-$v.txt"))"
done

# --- What the libraries export and need ------------------------------------------
describe_library() { # FILE
  echo "== $1"
  readelf -d "$1" | grep -E 'NEEDED|FLAGS|RPATH|RUNPATH|INIT_ARRAYSZ'
  readelf -lW "$1" | grep -E '^ +TLS' | sed 's/^/TLS segment: /'
  echo "exported (defined dynamic symbols): $(nm -D --defined-only "$1" | wc -l);" \
    "STB_GNU_UNIQUE: $(readelf --dyn-syms -W "$1" | awk '$5 == "UNIQUE"' | wc -l)"
  nm -D --defined-only "$1" | awk '{print $3}' | grep -v '^_ZN7tilejit6python' |
    c++filt | head -40 | cut -c1-200
}
{
  describe_library "$work/base/$core"
  for v in $variants; do
    [ "${built[$v]}" = 0 ] && describe_library "$(ls "$work/$v"/tilejit/_tilejit*.so)"
  done
} >"$logs/libraries.txt" 2>&1

# --- The imports -------------------------------------------------------------------
# Each case ends by naming the pybind11 internals the process holds, in builtins
# (pybind11 2.x) and in the interpreter's dict (3.x), and by touching CUDA.
report='
import builtins, ctypes, sys
get = ctypes.pythonapi.PyInterpreterState_Get
get.restype = ctypes.c_void_p
get_dict = ctypes.pythonapi.PyInterpreterState_GetDict
get_dict.restype, get_dict.argtypes = ctypes.py_object, [ctypes.c_void_p]
keys = [k for k in list(vars(builtins)) + list(get_dict(get())) if "pybind11" in str(k)]
print("pybind11 internals:", sorted(set(map(str, keys))))
import torch
if torch.cuda.is_available():
    print("cuda:", torch.ones(4, device="cuda").sum().item())
m = sys.modules.get("tilejit") or sys.modules.get("_tilejit")
print("tilejit from:", getattr(m, "__file__", None))
'
load_module='
import importlib.util, glob
path = glob.glob(KIT + "/tilejit/_tilejit*.so")[0]
spec = importlib.util.spec_from_file_location("_tilejit", path)
importlib.util.module_from_spec(spec)
'
declare -A cases=(
  [torch-alone]="import torch"
  [core-then-torch]="import ctypes; ctypes.CDLL(KIT + '/$core'); import torch"
  [module-then-torch]="$load_module
import torch"
  [tilejit-then-torch]="import tilejit, tilejit.ops"
  [torch-then-tilejit]="import torch, tilejit, tilejit.ops"
)
declare -A result
failed_kit=0
trace_crash() { # NAME DIR CODE: a native backtrace and the dynamic linker's view
  local name=$1 dir=$2 code=$3 dbg
  dbg=$(command -v cuda-gdb || command -v gdb || true)
  if [ -n "$dbg" ]; then
    PYTHONPATH=$dir timeout 300 "$dbg" -batch -ex 'set debuginfod enabled off' \
      -ex 'set pagination off' -ex run -ex 'bt 40' -ex 'info sharedlibrary' \
      --args "$python" -X faulthandler -c "$code" >"$logs/$name.gdb.txt" 2>&1
  else
    echo "no gdb or cuda-gdb on the PATH" >"$logs/$name.gdb.txt"
  fi
  rm -rf "$work/lddebug" && mkdir "$work/lddebug"
  PYTHONPATH=$dir LD_DEBUG=libs,bindings LD_DEBUG_OUTPUT=$work/lddebug/ld timeout 300 \
    "$python" -X faulthandler -c "$code" >/dev/null 2>&1
  cat "$work"/lddebug/* >"$work/ld.txt"
  rm -rf "$work/lddebug"
  {
    echo "== the last libraries initialized (calling init):"
    grep 'calling init:' "$work/ld.txt" | tail -15
    echo "== symbols other libraries bind to tilejit's libraries:"
    awk '$2 == "binding" && $4 !~ /tilejit/ && $7 ~ /tilejit/' "$work/ld.txt" | head -40
    echo "== symbols tilejit's libraries bind outside libc, libm, libstdc++, libgcc, zlib, zstd, python:"
    awk '$2 == "binding" && $4 ~ /tilejit/ && $7 !~ /(tilejit|libc\.so|libm\.so|libstdc\+\+|libgcc_s|ld-linux|libz\.so|libzstd|libpython|python3)/' \
      "$work/ld.txt" | head -40
  } >"$logs/$name.ld.txt" 2>&1
  rm -f "$work/ld.txt"
}
run_case() { # VARIANT CASE
  local dir=$work/$1 name=$1.$2 code=${cases[$2]//KIT/\'$work/$1\'} rc
  PYTHONPATH=$dir timeout 300 "$python" -X faulthandler -c "$code
$report" >"$logs/$name.txt" 2>&1
  rc=$?
  if [ $rc = 0 ]; then
    result[$name]=ok
    return 0
  fi
  result[$name]="rc $rc$([ $rc -gt 128 ] && [ $rc != 124 ] && echo " (signal $((rc - 128)))")"
  if [ "$1" = kit ] || [ "$2" = core-then-torch ] || [ "$2" = module-then-torch ]; then
    trace_crash "$name" "$dir" "$code"
  fi
  return 1
}
run_case kit torch-alone || { echo "torch alone fails: ${result[kit.torch-alone]}"; tail -20 "$logs/kit.torch-alone.txt"; exit 2; }
run_case kit core-then-torch
for v in $variants; do
  [ "${built[$v]}" = 0 ] || { result[$v.build]="build failed"; [ $v = kit ] && failed_kit=1; continue; }
  for c in module-then-torch tilejit-then-torch torch-then-tilejit; do
    run_case "$v" "$c" || { [ $v = kit ] && [ $c != module-then-torch ] && failed_kit=1; }
  done
done

# --- The report (the device returns the last 12,000 characters: the most telling last)
echo
echo "== exports and TLS (libraries.txt)"
grep -E '^==|exported|TLS segment|FLAGS' "$logs/libraries.txt" | sed "s|$work/||"
for name in kit.tilejit-then-torch kit.torch-then-tilejit; do
  [ "${result[$name]:-}" = ok ] && continue
  echo
  echo "== $name.txt (tail)"
  tail -15 "$logs/$name.txt" | cut -c1-200
done
for f in $(ls "$logs"/*.ld.txt 2>/dev/null | sort -r); do
  echo
  echo "== $(basename "$f") (head)"
  head -25 "$f" | cut -c1-200
done
for f in $(ls "$logs"/*.gdb.txt 2>/dev/null | sort -r); do
  echo
  echo "== $(basename "$f"): the crashing thread"
  grep -E '^(Thread .* received|Program received|#[0-9]+ )' "$f" | head -16 | cut -c1-180
done
echo
echo "== pybind11 internals per case"
grep -H 'pybind11 internals' "$logs"/*.txt | sed "s|$logs/||; s|.txt:pybind11 internals||" |
  cut -c1-220
echo
echo "== results (logs: $logs$([ -n "${OUT:-}" ] && echo ", packed in \$OUT/import_order_logs.tar.xz"))"
for k in $(printf '%s\n' "${!result[@]}" | sort); do printf '%-36s %s\n' "$k" "${result[$k]}"; done
echo "module as the kit builds it: $([ $failed_kit = 0 ] && echo "imports in both orders" || echo FAILS)"
exit $failed_kit
