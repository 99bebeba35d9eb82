#!/usr/bin/env python3
"""Holds every component to the dependency direction of docs/design.md#components.

Usage: layering.py SOURCE_DIR
       layering.py --self-test

Each top-level component may include the headers of the components below it
only: a runtime header that includes a compiler header, a compiler file that
includes a runtime header, or an MLIR header in support/ or runtime/ is an
error naming the file, the line and the rule. tools/, python_bindings/ and
tests/ may include anything. Inside models/, plan/ (step plans, their runners
and checks) depends on no model: it includes nothing of nemotron_h/ or mamba2/.
--self-test plants each kind of include in a scratch tree and shows that the
check reports it, so the check itself cannot pass vacuously.
"""
import re
import sys
from pathlib import Path

# Run from the source tree: the shared module leaves no __pycache__ there.
sys.dont_write_bytecode = True
import include_checks  # noqa: E402

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
# Folders of one component that must not include others of it: the folder (its
# sources and its headers under include/tilejit/) and what it must not reach.
INNER = {
    "models/plan": {
        "headers": "models/include/tilejit/models/plan",
        "forbidden": re.compile(r"(^|/)(nemotron_h|mamba2)/"),
        "why": "plan/ depends on no model (nemotron_h/, mamba2/)",
    },
}
# tilejit/<folder>/ of the lower-case components; capitalized folders
# (tilejit/Dialect/, tilejit/Builder/, ...) are the compiler's.
NAMED = {"support", "runtime", "jit", "tuning", "models", "embed", "python"}
# LLVM headers every component may use: they need LLVMSupport only.
SUPPORT_LLVM = re.compile(r"llvm/(ADT|Support|Config|Demangle)/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".h", ".cpp", ".inc", ".td")


def component_of(header):
    """The component a quoted include belongs to, or None for a local one."""
    if header.startswith("mlir/") or (header.startswith("llvm/")
                                      and not SUPPORT_LLVM.match(header)):
        return "mlir"
    if header.startswith("tilejit/"):
        folder = header.split("/")[1]
        return folder if folder in NAMED else "compiler"
    return None


def includes(path):
    """(line number, included header) of each quoted include of `path`."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = INCLUDE.match(line)
        if match:
            yield number, match.group(1)


def check(root):
    """The problems of the tree at `root`, and how many files were read."""
    problems, checked = [], 0
    for component, allowed in ALLOWED.items():
        for path in sorted((root / component).rglob("*")):
            if path.suffix not in SOURCES:
                continue
            checked += 1
            for number, header in includes(path):
                target = component_of(header)
                if target and target not in allowed:
                    what = "MLIR or LLVM beyond Support" if target == "mlir" else target
                    problems.append(f"{path.relative_to(root)}:{number}: {component}/ "
                                    f"includes {header} ({what}); it may use "
                                    f"{', '.join(sorted(allowed - {'mlir'}))}")
    for folder, rule in INNER.items():
        for top in (root / folder, root / rule["headers"]):
            for path in sorted(top.rglob("*")):
                if path.suffix not in SOURCES:
                    continue
                for number, header in includes(path):
                    if rule["forbidden"].search(header):
                        problems.append(f"{path.relative_to(root)}:{number}: includes "
                                        f"{header}; {rule['why']}")
    return problems, checked


def self_test():
    clean = {
        "runtime/lib/Good.cpp": '#include "tilejit/support/Arch.h"\n',
        "models/plan/Good.cpp": '#include "tilejit/models/plan/StepPlan.h"\n',
        "models/nemotron_h/Good.cpp": '#include "tilejit/models/plan/Compare.h"\n',
    }
    model = "plan/ depends on no model"
    planted = [
        ("runtime/lib/Bad.cpp", "tilejit/Builder/Builder.h", "runtime/ includes"),
        ("support/lib/Bad.cpp", "mlir/IR/MLIRContext.h", "MLIR or LLVM beyond Support"),
        ("embed/lib/Bad.cpp", "tilejit/Pipeline/Pipeline.h", "embed/ includes"),
        ("models/plan/Bad.cpp", "tilejit/models/nemotron_h/Planner.h", model),
        ("models/include/tilejit/models/plan/Bad.h", "tilejit/models/mamba2/Kernels.h",
         model),
        ("models/plan/Relative.cpp", "../mamba2/Parts.h", model),
    ]
    return include_checks.self_test(check, clean, planted)


if __name__ == "__main__":
    sys.exit(include_checks.main(__doc__, check, self_test,
                                 "includes against the layering"))
