"""What the include checks (layering.py, embed_headers.py) share: the command
line (typed_seams.py's and sizes.py's too), and the self-test that plants
includes in a scratch tree to show a check reports each of them, so that a
check cannot pass vacuously."""
import sys
import tempfile
from pathlib import Path


def self_test(check, clean, planted):
    """Writes `clean` ({path: text}) into a scratch tree, which `check` must find
    clean, then plants each of `planted` ([(path, header, expected)]) alone:
    `check` must report exactly one problem, naming "includes HEADER" and
    `expected`. Returns the exit code."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, text in clean.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        if check(root)[0]:
            print(f"self-test: a clean tree was reported: {check(root)[0]}")
            return 1
        for name, header, expected in planted:
            bad = root / name
            bad.parent.mkdir(parents=True, exist_ok=True)
            bad.write_text(f'#include <vector>\n#include "{header}"\n')
            problems, _ = check(root)
            bad.unlink()
            if len(problems) != 1 or f"includes {header}" not in problems[0] \
                    or expected not in problems[0]:
                print(f"self-test: {header} planted in {name}, reported {problems}")
                return 1
            print(f"self-test: {problems[0]}")
    print(f"self-test: each of {len(planted)} planted includes reported")
    return 0


def main(doc, check, run_self_test, found):
    """The command line of a check: SOURCE_DIR, or --self-test. `found` words
    the problems in the summary line ("includes against the layering")."""
    if len(sys.argv) != 2:
        sys.exit(doc)
    if sys.argv[1] == "--self-test":
        return run_self_test()
    problems, checked = check(Path(sys.argv[1]))
    for p in problems:
        print(p)
    print(f"{checked} files checked, {len(problems)} {found}")
    return 1 if problems or checked == 0 else 0
