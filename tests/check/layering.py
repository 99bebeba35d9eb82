#!/usr/bin/env python3
"""Holds every component to the dependency direction of docs/design.md#components.

Usage: layering.py SOURCE_DIR

Each top-level component may include the headers of the components below it
only: a runtime header that includes a compiler header, a compiler file that
includes a runtime header, or an MLIR header in support/ or runtime/ is an
error naming the file, the line and the rule. tools/, python_bindings/ and
tests/ may include anything.
"""
import re
import sys
from pathlib import Path

# What each component may include, itself included. "mlir" stands for MLIR
# and the LLVM libraries beyond Support (IR, targets, passes).
ALLOWED = {
    "support": {"support"},
    "compiler": {"support", "compiler", "mlir"},
    "runtime": {"support", "runtime"},
    "jit": {"support", "compiler", "runtime", "jit", "mlir"},
    "tuning": {"support", "compiler", "runtime", "jit", "tuning", "mlir"},
    "models": {"support", "compiler", "runtime", "jit", "tuning", "models", "mlir"},
    # The embedding API's implementation reaches the models, never the compiler
    # or MLIR directly; its public headers include none of tilejit's others
    # (embed_headers.py).
    "embed": {"support", "runtime", "jit", "tuning", "models", "embed"},
}
# tilejit/<folder>/ of the lower-case components; capitalized folders
# (tilejit/Dialect/, tilejit/Builder/, ...) are the compiler's.
NAMED = {"support", "runtime", "jit", "tuning", "models", "embed", "python"}
# LLVM headers every component may use: they need LLVMSupport only.
SUPPORT_LLVM = re.compile(r"llvm/(ADT|Support|Config|Demangle)/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def component_of(header):
    """The component a quoted include belongs to, or None for a local one."""
    if header.startswith("mlir/") or (header.startswith("llvm/")
                                      and not SUPPORT_LLVM.match(header)):
        return "mlir"
    if header.startswith("tilejit/"):
        folder = header.split("/")[1]
        return folder if folder in NAMED else "compiler"
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = Path(sys.argv[1])
    problems, checked = [], 0
    for component, allowed in ALLOWED.items():
        for path in sorted((root / component).rglob("*")):
            if path.suffix not in (".h", ".cpp", ".inc", ".td"):
                continue
            checked += 1
            for number, line in enumerate(path.read_text().splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = component_of(match.group(1))
                if target and target not in allowed:
                    what = "MLIR or LLVM beyond Support" if target == "mlir" else target
                    problems.append(f"{path.relative_to(root)}:{number}: {component}/ "
                                    f"includes {match.group(1)} ({what}); it may use "
                                    f"{', '.join(sorted(allowed - {'mlir'}))}")
    for p in problems:
        print(p)
    print(f"{checked} files checked, {len(problems)} includes against the layering")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
