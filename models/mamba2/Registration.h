// What the registrations of the Mamba2 kernels share (Register.cpp): the ranges
// of their constants, the constants several kernels take, the rules between
// constants; and the registration of each kernel family, next to its kernel.
#ifndef TILEJIT_MODELS_MAMBA2_REGISTRATION_H
#define TILEJIT_MODELS_MAMBA2_REGISTRATION_H

#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

/// Shapes and strides: far past the model's, small enough that every i32
/// column index and offset the kernels form stays exact.
ConstantRange sizeRange();
/// A row stride (0: the default width), or a count of columns around the ones
/// a kernel reads where none is allowed (tilejit.ops' causal_conv1d_fn passes
/// an xBC row without z or dt): up to sizeRange's.
ConstantRange columnsRange();
/// Tile dimensions (a register layout needs powers of two).
ConstantRange tileRange();
ConstantRange warpsRange();
/// Shared-memory buffers of a K loop.
ConstantRange stagesRange();
/// Builder-unrolled loops: K steps of a GEMV, loads issued together.
constexpr int64_t kMaxUnrolledSteps = 256;
ConstantRange inFlightRange();

/// Offsets into a [heads, head_dim, state] page and a channels-wide row are
/// i32 sums in the kernels.
std::vector<ConstantRule> pageRules();
/// "`stride` is 0 (the row is `width` wide) or at least `width`": a kernel
/// reading its rows in place from a wider one.
ConstantRule zeroOrAtLeast(llvm::StringRef stride, llvm::StringRef width);
/// Columns `col` + [0, width) lie within a row of `stride` (0: of width, so
/// `col` must be 0): a kernel reading a slice of a wider row in place.
ConstantRule columnsWithin(llvm::StringRef col, llvm::StringRef width,
                           llvm::StringRef stride);
/// i64 slot tables are range-checked on the device before any slot becomes an
/// offset, so they come only with the checks.
ConstantRule slotsI64NeedsChecks();

// Constants more than one kernel takes, several for tilejit.ops' callers
// (PyTorch's conventions); their defaults build the kernels the plans use.
KernelConstant aLog();
KernelConstant dtSoftplus();
/// Programmatic dependent launch; `byDefault` is 2 in the GEMV projections,
/// whose first weight loads then go out before the wait.
KernelConstant dependent(int64_t byDefault = 1);
KernelConstant prefetch();
KernelConstant yF32();
KernelConstant stateLayout();
KernelConstant slotsI64();
KernelConstant checked();
/// An operand's element type, for tilejit.ops' callers who pass f32, f16 or
/// bf16 tensors: 0 bf16 (the default, which the plans' kernels use), 1 f16,
/// 2 f32. `operand` names what the type applies to in the constant's help.
KernelConstant elementType(llvm::StringRef name, llvm::StringRef operand);
/// The DType an elementType constant selects.
DType elementTypeOf(const Specialization &spec, llvm::StringRef name);

/// The constants and rules both decode projections (in_proj_conv, out_proj)
/// take for their GEMV, direct and tensor-core forms.
KernelConstant projectionBlockM();
KernelConstant projectionStages();
KernelConstant projectionDirect();
KernelConstant projectionSplitK();
/// The rules of a projection whose K of `inner` the GEMV unrolls.
std::vector<ConstantRule> projectionRules(llvm::StringRef inner);

// Each kernel family's registration, in the file of its kernel.
KernelDef gatedRmsNormKernel();
KernelDef quantizeE4m3Kernel();
KernelDef inProjConvKernel();
KernelDef ssmUpdateKernel();
KernelDef outProjKernel();
KernelDef splitKSumKernel();
/// ssd_prefill and ssd_span_state: one chunk loop, the same constants.
std::vector<KernelDef> ssdKernels();
KernelDef ssdStatePassKernel();
KernelDef ssdChunkScanKernel();
KernelDef convPrefillKernel();
KernelDef checkVarlenKernel();
KernelDef varlenPiecesKernel();
KernelDef convUpdateKernel();

} // namespace tilejit::models

#endif // TILEJIT_MODELS_MAMBA2_REGISTRATION_H
