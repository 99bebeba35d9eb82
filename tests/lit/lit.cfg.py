# lit configuration of tilejit's IR tests: every .mlir file under this
# directory is a test, run through tilejit-opt and FileCheck.
import os
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "tilejit"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

# tilejit's code built with assert() on: its LLVM_DEBUG traces are compiled in.
if config.tilejit_assertions:
    config.available_features.add("asserts")

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.tilejit_lit_obj_dir

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
# A FileCheck variable defined before a CHECK-LABEL is forgotten at the next
# label (its name does not start with '$'), so one function's value never
# passes for another's.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
# FileCheck, not and count from LLVM's tools directory.
llvm_config.use_default_substitutions()
llvm_config.add_tool_substitutions(["not", "count"], config.llvm_tools_dir)
# tilejit and tilejit-opt from this build tree, never ones found on PATH.
llvm_config.add_tool_substitutions(["tilejit", "tilejit-opt"], [config.tilejit_tools_dir])
# Tests that generate their input (IR too large to keep in a file) run Python.
config.substitutions.append(("%python", sys.executable))
