"""Experiment (issue 20): make the two consumer warpgroups of a producer GEMM take
turns issuing their wgmma groups, so one group's products are promoted while the
other warpgroup's run. Rewrites PTX from `tilejit compile ... producer=1 warps=8`:
before each `wgmma.fence` a warpgroup waits on its named barrier (2 + wg), after
each `wgmma.commit_group` it arrives on the other's (3 - wg); warpgroup 1 arrives
once up front so warpgroup 0 goes first, and warpgroup 0 takes the one arrival left
over before the kernel ends. Usage: turns.py IN.ptx OUT.ptx"""
import re
import sys

src = open(sys.argv[1]).read().split("\n")
out, regs_done, seen_inc = [], False, False
last_label = max(i for i, l in enumerate(src) if re.match(r"\$L__BB\d+_\d+:", l))
for i, line in enumerate(src):
    if i == last_label:
        out.append("\t@%tjw0 bar.sync 2, 256;")
    out.append(line)
    s = line.strip()
    if not regs_done and s.startswith(".reg .b64"):
        out += ["\t.reg .b32 %tjme, %tjot;", "\t.reg .pred %tjw0, %tjw1;"]
        regs_done = True
    elif s.startswith("setmaxnreg.inc"):
        seen_inc = True
    elif seen_inc and s == "// end inline asm" and out[-2].strip().startswith("setmaxnreg.inc"):
        out += ["\tmov.u32 %tjme, %tid.x;", "\tshr.u32 %tjme, %tjme, 7;",
                "\tsetp.eq.u32 %tjw0, %tjme, 0;", "\tsetp.eq.u32 %tjw1, %tjme, 1;",
                "\tsub.u32 %tjot, 3, %tjme;", "\tadd.u32 %tjme, %tjme, 2;",
                "\t@%tjw1 bar.arrive 2, 256;"]
    elif s == "wgmma.commit_group.sync.aligned;":
        out.append("\tbar.arrive %tjot, 256;")
for j, line in enumerate(out):
    if line.strip() == "wgmma.fence.sync.aligned;":
        out[j] = "\tbar.sync %tjme, 256;\n" + line
assert regs_done and seen_inc, "not a producer GEMM"
open(sys.argv[2], "w").write("\n".join(out))
