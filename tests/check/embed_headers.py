#!/usr/bin/env python3
"""Holds the embedding API to its promise: a program that uses it includes no
LLVM, MLIR or CUDA header (docs/embed.md).

Usage: embed_headers.py SOURCE_DIR
       embed_headers.py --self-test

Every #include of the public headers (embed/include/) and of every source under
examples/ is checked: an LLVM, MLIR or CUDA header, or a tilejit header outside
tilejit/embed/ (those include LLVM's), is an error naming the file, the line and
what it includes. --self-test plants each kind of include in a scratch tree and
shows that the check reports it, so the check itself cannot pass vacuously.
"""
import re
import sys
from pathlib import Path

# Run from the source tree: the shared module leaves no __pycache__ there.
sys.dont_write_bytecode = True
import include_checks  # noqa: E402

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
SOURCES = (".h", ".hpp", ".cpp", ".cc", ".cxx")
# What an embedder must not need: LLVM (llvm/, llvm-c/), MLIR, the CUDA
# driver, runtime and toolkit headers, and tilejit's headers beyond the API.
FORBIDDEN = [
    (re.compile(r"^(llvm|llvm-c)/"), "an LLVM header"),
    (re.compile(r"^mlir(-c)?/"), "an MLIR header"),
    (re.compile(r"^(cuda|cudaTypedefs|cuda_runtime|cuda_runtime_api|driver_types|nvrtc|cuComplex)\b"
                r"|^(cuda|crt|nv)/"), "a CUDA header"),
    (re.compile(r"^tilejit/(?!embed/)"), "a tilejit header outside tilejit/embed/"),
]


def check(root):
    """The problems of `root`'s API headers and examples, and how many files were read."""
    files = []
    for folder in (root / "embed" / "include", root / "examples"):
        files += [p for p in sorted(folder.rglob("*")) if p.suffix in SOURCES]
    problems = []
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            for pattern, what in FORBIDDEN:
                if pattern.search(match.group(1)):
                    problems.append(f"{path.relative_to(root)}:{number}: includes "
                                    f"{match.group(1)} ({what}); the embedding API and "
                                    f"its examples use standard C++, fmt and "
                                    f"tilejit/embed/ only")
    return problems, len(files)


def self_test():
    clean = {"embed/include/tilejit/embed/Api.h": '#include "tilejit/embed/Result.h"\n'
                                                  "#include <fmt/format.h>\n"
                                                  "#include <vector>\n"}
    planted = [("examples/embed/main.cpp", header, f"({what})") for header, what in [
        ("llvm/Support/Error.h", "an LLVM header"),
        ("mlir/IR/MLIRContext.h", "an MLIR header"),
        ("cuda.h", "a CUDA header"),
        ("cuda_runtime_api.h", "a CUDA header"),
        ("tilejit/runtime/Jit.h", "a tilejit header outside tilejit/embed/"),
    ]]
    return include_checks.self_test(check, clean, planted)


if __name__ == "__main__":
    sys.exit(include_checks.main(__doc__, check, self_test,
                                 "includes an embedder should not need"))
