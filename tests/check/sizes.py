#!/usr/bin/env python3
"""Holds the repository to its size limits (docs/design.md#sizes).

Usage: sizes.py SOURCE_DIR | sizes.py --self-test

- Every tracked source, build, script and IR file (C++, CUDA, TableGen, Python,
  shell, CMake, MLIR) has at most 450 lines: a longer one is split by
  responsibility.
- Every C++ and Python function has at most 120 lines. A lambda, a local class
  or a statement block counts towards the function that holds it; a brace
  initializer (`= {`, a declarative table) is not a function.

Each violation is printed as FILE:LINE with the count and the limit.
"""
import ast
import re
import subprocess
import sys
from pathlib import Path

# Run from the source tree: the shared module leaves no __pycache__ there.
sys.dont_write_bytecode = True
import cpp_text  # noqa: E402
import include_checks  # noqa: E402

MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 120
SUFFIXES = {".h", ".cpp", ".cu", ".td", ".py", ".sh", ".cmake", ".mlir", ".in"}
NAMES = {"CMakeLists.txt", "Makefile"}
SKIP_PARTS = {"third_party", "regressions"}

CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\b\s*(\(.*\))?\s*$")
# A function head ends in its parameter list, perhaps followed by qualifiers, a
# trailing return type or a constructor's initializer list.
FUNCTION_HEAD = re.compile(
    r"\)\s*(const|override|final|noexcept|mutable|&|&&|\s)*(->\s*[^{};]+)?$"
    r"|\)\s*:\s*[\w:]+\s*[({].*$")


def strip_cpp(source):
    """`source` with comments and string/character literals blanked, newlines kept."""
    out = []
    for kind, text in cpp_text.pieces(source):
        if kind == "comment":
            out.append("\n" * text.count("\n"))
        elif kind == "char":
            out.append("''")
        elif kind == "string":
            out.append('""' + "\n" * text.count("\n"))
        else:
            out.append(text)
    return "".join(out)


def cpp_functions(source):
    """(first line, line count, head) of each outermost function body."""
    text = strip_cpp(source)
    found, stack, line = [], [], 1
    for k, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif ch == "{":
            j = k - 1
            while j >= 0 and text[j] not in ";{}":
                j -= 1
            head = " ".join(text[j + 1:k].split())
            is_function = (bool(FUNCTION_HEAD.search(head)) and not CONTROL.search(head)
                           and not head.endswith("="))
            inside = any(entry[0] for entry in stack)
            stack.append((is_function and not inside, line, head))
        elif ch == "}" and stack:
            is_function, start, head = stack.pop()
            if is_function:
                found.append((start, line - start + 1, head[-60:]))
    return found


def python_functions(source):
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [(node.lineno, node.end_lineno - node.lineno + 1, node.name)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def check_file(name, source):
    problems = []
    lines = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
    if lines > MAX_FILE_LINES:
        problems.append(f"{name}: {lines} lines (at most {MAX_FILE_LINES}: split it by "
                        "responsibility)")
    suffix = Path(name).suffix
    functions = (cpp_functions(source) if suffix in {".h", ".cpp", ".cu"}
                 else python_functions(source) if suffix == ".py" else [])
    for start, count, what in functions:
        if count > MAX_FUNCTION_LINES:
            problems.append(f"{name}:{start}: function '{what}' has {count} lines (at "
                            f"most {MAX_FUNCTION_LINES})")
    return problems


def tracked_files(root):
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                            check=True).stdout.split("\n")
    for name in listed:
        path = Path(name)
        if not name or SKIP_PARTS & set(path.parts):
            continue
        if path.suffix in SUFFIXES or path.name in NAMES:
            yield name


def self_test():
    long_function = "int f(int x) {\n" + "  x += 1;\n" * 130 + "  return x;\n}\n"
    table = "const int table[] = {\n" + "  1,\n" * 130 + "};\n"
    lambda_inside = ("void g() {\n  auto h = [](int y) {\n" + "    y += 1;\n" * 125 +
                     "  };\n}\n")
    python = "def f():\n" + "    x = 1\n" * 125
    cases = [
        ("long.cpp", long_function, 1),
        ("table.cpp", table, 0),
        ("lambda.cpp", lambda_inside, 1),
        ("control.cpp", "void k() {\n  if (a) {\n" + "  x();\n" * 100 + "  }\n}\n", 0),
        ("long.py", python, 1),
        ("big.sh", "echo\n" * 451, 1),
        ("ok.sh", "echo\n" * 450, 0),
    ]
    failed = 0
    for name, source, expected in cases:
        got = len(check_file(name, source))
        if got != expected:
            print(f"self-test {name}: {got} problem(s), expected {expected}")
            failed += 1
    print(f"self-test: {len(cases) - failed} of {len(cases)} cases as expected")
    return 1 if failed else 0


def check(root):
    """(problems, files checked) over the tracked files under `root`."""
    problems, checked = [], 0
    for name in tracked_files(root):
        checked += 1
        problems += check_file(name, (root / name).read_text(errors="replace"))
    return problems, checked


if __name__ == "__main__":
    sys.exit(include_checks.main(__doc__, check, self_test, "over the size limits"))
