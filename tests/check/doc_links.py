#!/usr/bin/env python3
"""Checks that every document link and every cited document section resolves.

Usage: doc_links.py SOURCE_DIR

Over the repository's text files (sources, scripts, CMake, documentation):
- every markdown link `[text](target)` of a .md file whose target is not a URL
  must name an existing file or folder (relative to the .md file), and its
  `#anchor` a heading of the target .md (as GitHub spells the anchor);
- every mention of a markdown file (`docs/numerics.md`, `tune.md`) must name a
  file of the repository, relative to its root or to the mentioning file;
- a section is cited as `FILE.md#anchor` or `FILE.md, "Heading"`: the anchor or
  heading must exist. A section cited by number (`design.md §4`) is an error,
  since numbers do not survive an edit of the document;
- every path into `tests/` or `bench/` naming a file (`bench/gemm/hopper.py`,
  `tests/e2e/gpu_session.sh`) must name one of the repository (or the `.in` file
  CMake configures it from), so a moved script leaves no stale reference.
"""
import re
import sys
from pathlib import Path

SKIP_DIRS = {".git", "bundle", ".whl", "__pycache__", "regressions"}
TEXT_SUFFIXES = {".md", ".h", ".cpp", ".td", ".py", ".txt", ".cmake", ".sh", ".in",
                 ".mlir", ".cfg", ".map", ".cu"}
TEXT_NAMES = {"Makefile", "CMakeLists.txt", "run"}

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MENTION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)\b(#[\w-]+)?"
                     r"(?:, \"([^\"]+)\")?")
NUMBERED = re.compile(r"[\w.-]+\.md'?s?\s*(§|section\s+\d)")
SCRIPT = re.compile(r"(?<![\w/.-])((?:tests|bench)/[\w./-]*\."
                    r"(?:py|sh|txt|cu|cpp|h|json|mlir|cfg))\b")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def text_files(root):
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if any(p in SKIP_DIRS or p.startswith("build") for p in parts[:-1]):
            continue
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES):
            yield path


def slug(heading):
    """GitHub's anchor of a heading: formatting dropped, lower case, punctuation
    removed, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(path, cache={}):
    """The (anchor, heading text) pairs of a markdown file, code blocks skipped."""
    if path not in cache:
        found, seen, fenced = [], {}, False
        for line in path.read_text().splitlines():
            if line.startswith("```"):
                fenced = not fenced
                continue
            match = None if fenced else HEADING.match(line)
            if match:
                anchor = slug(match.group(1))
                count = seen.get(anchor, 0)
                seen[anchor] = count + 1
                found.append((anchor if count == 0 else f"{anchor}-{count}",
                              match.group(1).replace("`", "")))
        cache[path] = found
    return cache[path]


def resolve(root, source, target):
    for base in (source.parent, root):
        candidate = (base / target).resolve()
        if candidate.exists():
            return candidate
    return None


def check_section(md, anchor, title):
    """Why `anchor` or `title` is not a section of `md`; None when it is."""
    if md.suffix != ".md":
        return None
    if anchor and anchor not in {a for a, _ in headings(md)}:
        return f"no heading with anchor #{anchor}"
    if title and not any(t.lower().startswith(title.lower()) for _, t in headings(md)):
        return f"no heading '{title}'"
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = Path(sys.argv[1]).resolve()
    problems, citations = [], 0
    for path in text_files(root):
        if path == Path(__file__).resolve():
            continue  # its own examples
        where = path.relative_to(root)
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if NUMBERED.search(line):
                problems.append(f"{where}:{number}: a section cited by number; cite "
                                "FILE.md#anchor instead")
            targets = set()  # a link's target is a mention too: checked once
            if path.suffix == ".md":
                for link in LINK.findall(line):
                    if not re.match(r"[a-z]+:", link):
                        file, _, anchor = link.partition("#")
                        targets.add((file or path.name, anchor, ""))
            for file, anchor, title in MENTION.findall(line):
                targets.add((file, anchor.lstrip("#"), title))
            for script in SCRIPT.findall(line):
                citations += 1
                if not any((base / name).exists() for base in (root, path.parent)
                           for name in (script, script + ".in")):
                    problems.append(f"{where}:{number}: {script} is not in the repository")
            for file, anchor, title in sorted(targets):
                citations += 1
                target = path if file == path.name else resolve(root, path, file)
                if target is None:
                    problems.append(f"{where}:{number}: {file} is not in the repository")
                    continue
                why = check_section(target, anchor, title)
                if why:
                    problems.append(f"{where}:{number}: {file}: {why}")
    for p in problems:
        print(p)
    print(f"{citations} links and citations checked, {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
