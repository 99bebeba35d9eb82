// The PTX of every arch names the exact target and the PTX ISA the arch needs.
// RUN: tilejit dump vector_add --stage ptx --arch sm_90 | FileCheck %s --check-prefix=SM90
// RUN: tilejit dump vector_add --stage ptx --arch sm_90a | FileCheck %s --check-prefix=SM90A
// RUN: tilejit dump vector_add --stage ptx --arch sm_110a | FileCheck %s --check-prefix=SM110A
// RUN: tilejit dump vector_add --stage ptx --arch sm_121a | FileCheck %s --check-prefix=SM121A
// RUN: not tilejit dump vector_add --stage ptx --arch sm_110 2>&1 | FileCheck %s --check-prefix=BAD

// SM90: .version 8.8
// SM90-NEXT: .target sm_90{{$}}
// SM90A: .version 8.8
// SM90A-NEXT: .target sm_90a{{$}}
// SM110A: .version 9.0
// SM110A-NEXT: .target sm_110a{{$}}
// SM121A: .version 8.8
// SM121A-NEXT: .target sm_121a{{$}}
// BAD: only the arch-specific 'sm_110a' exists
