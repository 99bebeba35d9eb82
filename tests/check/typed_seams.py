#!/usr/bin/env python3
"""Holds the components below the edges to typed seams (docs/design.md#components).

Usage: typed_seams.py SOURCE_DIR
       typed_seams.py --self-test

An arch travels as an `Arch` and kernel constants as a `Specialization` (its
`ConstantValues`); text is read and written only where it arrives or leaves:
the command line, the environment, JSON, files, the PTX a fake device reads.
In the C++ files of support/, compiler/, runtime/, jit/, tuning/ and models/,
outside the edge files of EDGES, each of these is an error naming the file, the
line and the rule:
- a string literal that is an arch name ("sm_90a"), or the "sm_" one is built from;
- a call of Arch::parse;
- a string literal that is a constant setting ("block_n=16", "gemm.block_n=");
- a format string that writes one ("{0}={1}", ";{0}={1}", "{0}.{1}={2}",
  "block_n={0}"), or `name + "=" + std::to_string(value)`;
- a parse of one: parseConstantSetting, a split at '=', the text
  "KERNEL.CONSTANT=VALUE";
- a string or a collection of strings whose name has the word constant(s),
  override(s), setting(s) or flag(s) (`std::vector<std::string> constants`,
  `std::map<std::string, std::string> flags`).
Comments do not count. An edge file that holds none of these, or does not
exist, is an error too, so that the list cannot go stale. --self-test plants
each pattern in a scratch tree and shows that the check reports it, so the
check itself cannot pass vacuously.
"""
import re
import sys
import tempfile
from pathlib import Path

# Run from the source tree: the shared modules leave no __pycache__ there.
sys.dont_write_bytecode = True
import cpp_text  # noqa: E402
import include_checks  # noqa: E402

FOLDERS = ("support", "compiler", "runtime", "jit", "tuning", "models")
SOURCES = (".h", ".cpp")
# Where text is the medium, each read before it was listed. Every other file
# that reads or writes such text goes through one of these (the tuning
# database's JSON, tuning/lib/TuneDb.cpp, writes constants as JSON numbers and
# names them in messages with formatConstants) or lives above the edges
# (tools/, embed/, python_bindings/).
EDGES = {
    # The arch table: the one place the names are spelled, and Arch::parse.
    "support/lib/Arch.cpp",
    # The command-line option (tilejit-opt's pass options) that parses a name.
    "support/lib/ArchOption.cpp",
    # The environment reader: TILEJIT_ARCH is a name.
    "runtime/lib/RuntimeOptions.cpp",
    # The fake device reads the arch from the `.target` line of the PTX it loads.
    "runtime/lib/fake/FakePtx.cpp",
    # The one parser and formatter of "name=value" and "KERNEL.CONSTANT=VALUE"
    # (parseConstantSetting, formatConstants), which every edge calls.
    "compiler/lib/Builder/KernelRegistry.cpp",
    # The settings reader of `run --set` and the embedding API's settings.
    "models/plan/Validate.cpp",
}

ARCH_LITERAL = re.compile(r"^sm_\d*[a-z]?$")
SETTING_LITERAL = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?=-?\d*$")
_NAME_OR_ARG = r"([A-Za-z_]\w*|\{\d+\})"
SETTING_FORMAT = re.compile(r"^[\s;,]*(" + _NAME_OR_ARG + r"(\." + _NAME_OR_ARG +
                            r")?=\{\d+(:[^}]*)?\}[\s;,]*)+$")
SETTING_FORM = re.compile(r"KERNEL\.CONSTANT=VALUE")
# Words of a name that say it carries constants or options.
SEAM_WORDS = {"constant", "constants", "override", "overrides", "setting", "settings",
              "flag", "flags"}
# Text types, and collections whose elements or mapped values are text.
_TEXT = r"(std::string|llvm::StringRef)"
STRINGS = (r"(std::(vector|set|pair)\s*<\s*" + _TEXT + r"\s*(,\s*" + _TEXT + r"\s*)?>|"
           r"llvm::SmallVector\s*<\s*" + _TEXT + r"\s*(,\s*\d+\s*)?>|"
           r"(std::(unordered_)?map|llvm::StringMap)\s*<\s*([^<>,;]+,\s*)?" + _TEXT +
           r"\s*>|" + _TEXT + ")")
# Rules over the code with string literals emptied (a declaration, the name
# after a type, is not a call) ...
CODE_RULES = [
    (re.compile(r"\bArch::parse\s*\("),
     "parses an arch name (an Arch travels as a value; names are parsed at the edges)"),
    (re.compile(r"\bparseConstantSetting\s*\("),
     "parses a constant setting (constants travel as a Specialization)"),
    (re.compile(r"\b(r?split|find|rfind|find_first_of|partition)\s*\(\s*'='"),
     "splits text at '=' (constants travel as a Specialization)"),
]
# ... and over the code with them kept: "name" + "=" + a number.
TEXT_RULES = [
    (re.compile(r'\+\s*"="\s*\+\s*(std::to_string|llvm::itostr|llvm::utostr|itostr|'
                r'utostr)\s*\('),
     "writes a constant setting (constants travel as a Specialization)"),
    (re.compile(r'"=?"\s*\.\s*split\b|\bsplit\s*\(\s*"="'),
     "splits text at '=' (constants travel as a Specialization)"),
]
DECLARATION = re.compile(STRINGS + r"\s*&?\s*(?P<name>[A-Za-z_]\w*)\s*[;={,)]")


def seam_name(name):
    """Whether `name` (camelCase or snake_case) has a word of SEAM_WORDS."""
    words = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name)
    return any(word.lower() in SEAM_WORDS for word in words)


def scan(source):
    """(`code`, `text`, `literals`): `source` with comments blanked, once with
    string literals emptied and once with them kept (newlines kept in both),
    and (line, content) of each string literal."""
    code, text, literals, line = [], [], [], 1
    for kind, piece in cpp_text.pieces(source):
        newlines = "\n" * piece.count("\n")
        if kind == "comment":
            code.append(newlines)
            text.append(newlines)
        elif kind == "string":
            literals.append((line, cpp_text.literal_content(piece)))
            code.append('""' + newlines)
            text.append(piece)
        else:
            code.append(piece)
            text.append(piece)
        line += len(newlines)
    return "".join(code), "".join(text), literals


def literal_problem(text):
    """Why the string literal `text` is a seam carrying text, or None."""
    if ARCH_LITERAL.match(text):
        return "is an arch name (an Arch travels as a value)"
    if SETTING_LITERAL.match(text):
        return "is a constant setting (constants travel as a Specialization)"
    if SETTING_FORMAT.match(text):
        return "formats a constant setting (constants travel as a Specialization)"
    if SETTING_FORM.search(text):
        return "reads the KERNEL.CONSTANT=VALUE form (settings are read at the edges)"
    return None


# Words a call may follow; any other word before a name is its type.
STATEMENT_WORDS = {"return", "else", "do", "case", "throw", "co_return", "co_await"}


def is_declaration(code, start):
    """Whether the name at `start` of `code` follows a type: a declaration."""
    before = code[:start].rstrip()
    word = re.search(r"(\w+)$", before)
    return before.endswith(">") or bool(word and word.group(1) not in STATEMENT_WORDS)


def check_source(name, source):
    """The problems of one C++ file named `name`."""
    code, text, literals = scan(source)
    found = [(line, f'"{content}" {why}') for line, content in literals
             if (why := literal_problem(content))]

    def line_of(view, offset):
        return view.count("\n", 0, offset) + 1

    for view, rules in ((code, CODE_RULES), (text, TEXT_RULES)):
        for pattern, why in rules:
            for match in pattern.finditer(view):
                if view is code and is_declaration(code, match.start()):
                    continue
                found.append((line_of(view, match.start()),
                              f"{' '.join(match.group(0).split())}: {why}"))
    for match in DECLARATION.finditer(code):
        if seam_name(match.group("name")):
            found.append((line_of(code, match.start()),
                          f"{' '.join(match.group(0).split())} holds constants or options "
                          "as text (a typed field or a Specialization carries them)"))
    return [f"{name}:{line}: {what}" for line, what in sorted(found)]


def check(root):
    """The problems of the tree at `root`, and how many files were read. An edge
    that holds none of the patterns is no longer one: it is reported too."""
    problems, checked = [], 0
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            name = path.relative_to(root).as_posix()
            if path.suffix not in SOURCES:
                continue
            found = check_source(name, path.read_text(errors="replace"))
            if name not in EDGES:
                checked += 1
                problems += found
            elif not found:
                problems.append(f"{name}: listed as an edge in typed_seams.py, but it "
                                "holds none of the patterns: take it off the list")
    for edge in sorted(EDGES):
        if not (root / edge).is_file():
            problems.append(f"{edge}: listed as an edge in typed_seams.py, but there is "
                            "no such file")
    return problems, checked


# Lines that hold a seam's value typed, or text that is no seam: a clean tree.
CLEAN = """\
// A comment may say "sm_90a", block_n=16, Arch::parse( and "{0}={1}".
/* So may a block comment: "block_n=16", text.split('='). */
Arch arch = request.arch;
std::string name = arch.name().str();
llvm::Error err = def.checkNames({{setting.name, setting.value}});
constraints += std::string(i ? "," : "") + "=" + w.reg;
return llvm::formatv("{0}={1} does not divide {2}={3}", tile, t, size, s);
std::vector<std::string> warnings;
ConstantValues constants;
std::map<std::string, int64_t> overrides;
llvm::Expected<ConstantSetting> parseConstantSetting(llvm::StringRef text);
"""
# One planted line per pattern, with the words its problem must name.
PLANTED = [
    ('KernelRequest request{name, ir, Arch("sm_90a")};', '"sm_90a" is an arch name'),
    ('if (arch.name() == "sm_121a")', '"sm_121a" is an arch name'),
    ('std::string target = "sm_" + std::to_string(major);', '"sm_" is an arch name'),
    ("Expected<Arch> arch = Arch::parse(options.arch);", "parses an arch name"),
    ("if (name.empty()) return Arch::parse(fallback);", "parses an arch name"),
    ('spec.constants.push_back("block_n=16");', "is a constant setting"),
    ('overrides.push_back("ssm_update.block_p=");', "is a constant setting"),
    ('std::string s = llvm::formatv("{0}={1}", name, value);', "formats a constant setting"),
    ('text += llvm::formatv(";{0}={1}", name, value);', "formats a constant setting"),
    ('out += llvm::formatv("block_n={0}", value);', "formats a constant setting"),
    ('out += llvm::formatv("{0}.{1}={2}", kernel, name, value);',
     "formats a constant setting"),
    ('out += name + "=" + std::to_string(value);', "writes a constant setting"),
    ("auto setting = parseConstantSetting(text, true);", "parses a constant setting"),
    ("auto [name, value] = text.split('=');", "splits text at '='"),
    ('auto [name, value] = text.split("=");', "splits text at '='"),
    ('return error("expected KERNEL.CONSTANT=VALUE");', "reads the KERNEL.CONSTANT=VALUE"),
    ("std::vector<std::string> constants;", "holds constants or options as text"),
    ("std::map<std::string, std::string> flags;", "holds constants or options as text"),
    ("void plan(const std::vector<std::string> &kernelOverrides);",
     "holds constants or options as text"),
    ("llvm::SmallVector<std::string> tunedConstants = {};",
     "holds constants or options as text"),
]


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for edge in EDGES:
            (root / edge).parent.mkdir(parents=True, exist_ok=True)
            (root / edge).write_text('Arch::parse("sm_90a");\n')
        clean = root / "models" / "plan" / "Clean.cpp"
        clean.write_text(CLEAN)
        if check(root)[0]:
            print(f"self-test: a clean tree was reported: {check(root)[0]}")
            return 1
        planted = root / "runtime" / "lib" / "Planted.cpp"
        where = CLEAN.count("\n") + 1
        for line, expected in PLANTED:
            planted.write_text(CLEAN + line + "\n")
            problems, _ = check(root)
            if len(problems) != 1 or expected not in problems[0] or \
                    not problems[0].startswith(f"runtime/lib/Planted.cpp:{where}:"):
                print(f"self-test: planted `{line}`, reported {problems}")
                return 1
            print(f"self-test: {problems[0]}")
        planted.write_text(CLEAN)
        stale = next(iter(sorted(EDGES)))
        (root / stale).write_text(CLEAN)
        problems, _ = check(root)
        if len(problems) != 1 or "take it off the list" not in problems[0]:
            print(f"self-test: an edge holding none of the patterns, reported {problems}")
            return 1
        (root / stale).unlink()
        problems, _ = check(root)
        if len(problems) != 1 or "no such file" not in problems[0]:
            print(f"self-test: an edge that does not exist, reported {problems}")
            return 1
    print(f"self-test: each of {len(PLANTED)} planted patterns and both kinds of stale "
          "edge reported")
    return 0


if __name__ == "__main__":
    sys.exit(include_checks.main(__doc__, check, self_test,
                                 "seams carrying text below the edges"))
