#!/usr/bin/env python3
"""Shows that a program using only the runtime links no MLIR and no LLVM backend.

Usage: runtime_links.py BINARY LLVM_LIBRARY_DIR

BINARY is linked against TilejitRuntime alone (tilejit-runtime-tests). It fails
when the binary defines or references any MLIR or NVPTX symbol, when it loads an
MLIR shared library, or, when it loads libLLVM.so (Debian's dynamic build, where
libLLVM holds every component), when any symbol it takes from libLLVM is one that
LLVMSupport (with LLVMDemangle, which Support uses) does not define.
"""
import re
import subprocess
import sys
from pathlib import Path


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def symbols(*cmd):
    """Names printed by an nm command, without symbol versions."""
    names = set()
    for line in run(*cmd).splitlines():
        fields = line.split()
        if len(fields) >= 2 and not line.endswith(":"):
            names.add(fields[-1].split("@")[0])
    return names


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, libdir = Path(sys.argv[1]), Path(sys.argv[2])
    problems = []

    libraries = run("ldd", str(binary))
    mlir_libs = [l.split()[0] for l in libraries.splitlines() if "libMLIR" in l]
    if mlir_libs:
        problems.append(f"loads MLIR shared libraries: {', '.join(mlir_libs)}")

    demangled = run("nm", "-C", str(binary)).splitlines()
    for pattern in (r"\bmlir::", r"NVPTX"):
        hits = [l.split(maxsplit=2)[-1] for l in demangled if re.search(pattern, l)]
        if hits:
            problems.append(f"{len(hits)} symbols match {pattern!r}, e.g. {hits[0]}")

    from_llvm = 0
    if "libLLVM" in libraries:
        dylib = next(libdir.glob("libLLVM.so.*"))
        exported = symbols("nm", "-D", "--defined-only", str(dylib))
        wanted = symbols("nm", "-u", str(binary)) & exported
        support = symbols("nm", "-g", "--defined-only", str(libdir / "libLLVMSupport.a"),
                          str(libdir / "libLLVMDemangle.a"))
        beyond = sorted(wanted - support)
        from_llvm = len(wanted)
        if beyond:
            names = run("c++filt", *beyond[:5]).split("\n")
            problems.append(f"{len(beyond)} of the {len(wanted)} symbols taken from "
                            f"{dylib.name} are not LLVMSupport's, e.g. {names[0]}")

    if problems:
        print(f"{binary.name} links more than the runtime may:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"{binary.name}: no MLIR or NVPTX symbol, no MLIR library; "
          f"{from_llvm} symbols from libLLVM, all of them LLVMSupport's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
