// The CLI on bad input (issue #23, docs/hardening.md): a constant outside its
// range, a --set naming nothing, a launch size outside i32, an output that
// cannot be written, a plan too big for the host. Each is one "tilejit: error:"
// line and exit 1, never an assert, a hang or LLVM's fatal "IO failure on
// output stream".
//
// RUN: not tilejit compile gemm_bf16 --set k=-64 -o %t.ptx 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: tilejit: error: kernel 'gemm_bf16': constant 'k' is -64; it must be in [1, 1048576]
// RUN: not tilejit dump in_proj_conv --stage tile --set fp8=2 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: tilejit: error: kernel 'in_proj_conv': constant 'fp8' is 2; it must be in [0, 1]
//
// RUN: not tilejit run --backend interp --set bogus.block=4 2>&1 | FileCheck %s --check-prefix=BOGUS
// BOGUS: tilejit: error: --set bogus.block=4: no kernel 'bogus' is registered
// RUN: not tilejit run --backend interp --set ssm_update.blok=4 2>&1 | FileCheck %s --check-prefix=CONST
// CONST: tilejit: error: --set ssm_update.blok=4: kernel 'ssm_update' has no constant 'blok'
// RUN: not tilejit run --backend interp --set ssm_update.block_p=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: tilejit: error: kernel 'ssm_update': constant 'block_p' is 0; it must be a power of two in [1, 4096]
// RUN: not tilejit run --backend interp --set vector_add.block=64 2>&1 | FileCheck %s --check-prefix=UNUSED
// UNUSED: tilejit: error: plan: --set vector_add.block=64: the plan launches no 'vector_add'
//
// RUN: not tilejit run --backend interp --batch 2000000000 2>&1 | FileCheck %s --check-prefix=HOST
// HOST: tilejit: error: plan: its buffers need {{.*}} PB of host memory (the largest, 'l0.ssm_page' [2000000002, 64, 64, 128]
//
// RUN: not tilejit tune gemm_bf16 --dry-run --shape m=-5 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: tilejit: error: kernel 'gemm_bf16': launch size 'm' is -5; it must be in [1, 2147483647] (kernels take their sizes as i32)
//
// RUN: not tilejit compile vector_add --arch sm_90a -o /dev/full 2>&1 | FileCheck %s --check-prefix=FULL
// FULL-NOT: LLVM ERROR
// FULL: tilejit: error: cannot write PTX '/dev/full': No space left on device
// FULL-NOT: LLVM ERROR
// RUN: not tilejit compile vector_add --arch sm_90a -o %t.ptx --meta /dev/full 2>&1 | FileCheck %s --check-prefix=META
// META: tilejit: error: cannot write launch metadata '/dev/full': No space left on device
// RUN: not tilejit dump vector_add --stage ptx --out /proc 2>&1 | FileCheck %s --check-prefix=OUT
// OUT-NOT: wrote
// OUT: tilejit: error: cannot write dump stage '/proc/vector_add.00-ptx.ptx':
// OUT-NOT: LLVM ERROR
// RUN: not tilejit list 2>&1 >/dev/full | FileCheck %s --check-prefix=STDOUT
// STDOUT-NOT: LLVM ERROR
// STDOUT: tilejit: error: cannot write standard output: No space left on device
//
// tilejit-opt reads and writes the same way: a device as input is refused (it
// read /dev/zero for ever), and a failed write is an error (it was LLVM's
// fatal "IO failure on output stream").
// RUN: not tilejit-opt /dev/zero 2>&1 | FileCheck %s --check-prefix=OPTIN
// OPTIN: tilejit-opt: error: IR file '/dev/zero' is a character device, not a regular file
// RUN: not tilejit-opt %s -o /dev/full 2>&1 | FileCheck %s --check-prefix=OPTOUT
// OPTOUT-NOT: LLVM ERROR
// OPTOUT: tilejit-opt: error: cannot write output '/dev/full': No space left on device
// RUN: not tilejit-opt %s 2>&1 >/dev/full | FileCheck %s --check-prefix=OPTSTDOUT
// OPTSTDOUT-NOT: LLVM ERROR
// OPTSTDOUT: tilejit-opt: error: cannot write standard output: No space left on device
