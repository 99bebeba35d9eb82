"""The `tilejit tune` commands that tune every kernel of a decode step at one
batch as the plan launches it (bench/tunedb_gpu.sh runs them): the plan's
launches from `tilejit run --dry-run`, one command per distinct kernel
instance, with --set for each constant the tuner must keep at the plan's value
(shapes and forms, and any tunable one whose plan value is not among its
candidates) and --start for the tunable ones, so the entry is keyed as the
plan looks it up and the plan's own configuration is the first candidate.
Usage: python3 bench/tune_plan_sets.py TILEJIT BATCH [run options...]
Prints one line per instance: NAME<TAB>KERNEL<TAB>--set a=1 --set b=2 ..."""

import re
import subprocess
import sys


def tunable_values(tilejit):
    """{kernel: {constant: {default, candidates...}}} from `tilejit list`."""
    out = subprocess.run([tilejit, "list"], capture_output=True, text=True, check=True)
    lists, kernel = {}, None
    for line in out.stdout.splitlines():
        if line and not line.startswith(" "):
            kernel = line.strip()
            continue
        m = re.match(r"\s+(\w+) = (-?\d+)\s.*tuned over ([-\d,]+)\s*$", line)
        if kernel and m:
            values = {int(m.group(2))} | {int(v) for v in m.group(3).split(",")}
            lists.setdefault(kernel, {})[m.group(1)] = values
    return lists


def plan_launches(tilejit, batch, options):
    """(kernel, role, {constant: value}) of each launch of the step's plan."""
    cmd = [tilejit, "run", "--dry-run", "--layers", "1", "--batch", str(batch)] + options
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    pattern = re.compile(r"^launch (\S+) \((\w+)[^)]*\) .* constants \[([^\]]*)\]")
    for line in out.stdout.splitlines():
        m = pattern.match(line)
        if m:
            constants = dict(kv.split("=") for kv in m.group(3).split(","))
            yield m.group(1), m.group(2), {k: int(v) for k, v in constants.items()}


def main():
    tilejit, batch, options = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    lists = tunable_values(tilejit)
    seen = set()
    for kernel, role, constants in plan_launches(tilejit, batch, options):
        if kernel not in lists:
            continue  # no launch choice to tune (gated_rmsnorm)
        key = (kernel, tuple(sorted(constants.items())))
        if key in seen:
            continue
        seen.add(key)
        searched = lists[kernel]
        sets = [f"--{'start' if k in searched and v in searched[k] else 'set'} {k}={v}"
                for k, v in sorted(constants.items())]
        print(f"{role}-{kernel}\t{kernel}\t{' '.join(sets)}")


if __name__ == "__main__":
    main()
