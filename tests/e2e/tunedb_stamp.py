#!/usr/bin/env python3
"""`tilejit tunedb stamp` against the shipped database: a copy of DB without its
code hashes, stamped by this build, must get back the committed hash of every
entry this build measured (the shipped hashes are this build's code, and a
compile gives the same code every time), and must leave every other entry
without one, named as another build's.
Usage: tunedb_stamp.py TILEJIT DB"""
import json
import os
import re
import subprocess
import sys
import tempfile

tj, db = sys.argv[1], sys.argv[2]
with open(db) as f:
    document = json.load(f)
shipped = document["entries"]
banner = subprocess.run([tj, "--version"], capture_output=True, text=True, check=True).stdout
m = re.match(r"tilejit \S+ \(build (\w+)\), LLVM/MLIR (\S+)", banner)
if not m:
    sys.exit(f"cannot read the build id from: {banner!r}")
version = f"{m.group(1)}/llvm-{m.group(2)}"
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "tune.json")
    with open(path, "w") as f:
        json.dump(dict(document, entries=[{k: v for k, v in e.items() if k != "code_hash"}
                                         for e in shipped]), f)
    env = dict(os.environ, TILEJIT_TUNE_DB=path, TILEJIT_CACHE_DIR=os.path.join(d, "cache"))
    run = subprocess.run([tj, "tunedb", "stamp"], env=env, capture_output=True, text=True)
    print(run.stdout + run.stderr, end="")
    if run.returncode:
        sys.exit(f"tilejit tunedb stamp exited {run.returncode}")
    with open(path) as f:
        stamped = json.load(f)["entries"]
bad, ours, same = [], 0, 0
for want, got in zip(shipped, stamped):
    name = f"{want['kernel']} [{want['shape_bucket']}]"
    if want["tilejit_version"] == version:
        ours += 1
        if want.get("code_hash") and got.get("code_hash") == want["code_hash"]:
            same += 1
        else:
            bad.append(f"{name}: stamped {got.get('code_hash')}, shipped {want.get('code_hash')}")
    elif "code_hash" in got or f"measured by tilejit {want['tilejit_version']}" not in run.stdout:
        bad.append(f"{name}: another build's entry, stamped or not named")
print(f"{ours} of {len(shipped)} entries measured by this build ({version}): "
      f"{same} stamped with the shipped hash")
if bad or len(stamped) != len(shipped):
    sys.exit("\n".join(bad) or "the stamp changed the number of entries")
