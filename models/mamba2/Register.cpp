// Registration of the model kernels (NemotronH defaults): what their
// registrations share (Registration.h), and the list of them.
#include "Registration.h"

namespace tilejit::models {

using R = ConstantRange;

ConstantRange sizeRange() { return R::between(1, 1 << 20); }
ConstantRange columnsRange() { return R::between(0, 1 << 20); }
ConstantRange tileRange() { return R::powersOfTwo(1, 1 << 12); }
ConstantRange warpsRange() { return R::powersOfTwo(1, 32); }
ConstantRange stagesRange() { return R::between(1, 8); }
ConstantRange inFlightRange() { return R::between(1, 64); }

std::vector<ConstantRule> pageRules() {
  return {divides("groups", "heads"),
          productAtMost({"heads", "head_dim", "state"}, INT32_MAX, "i32 page offsets"),
          productAtMost({"groups", "state"}, INT32_MAX / 4, "i32 B/C column offsets")};
}

ConstantRule zeroOrAtLeast(llvm::StringRef stride, llvm::StringRef width) {
  return {(stride + " is 0 or at least " + width).str(),
          {stride.str(), width.str()},
          [stride = stride.str(), width = width.str()](const Specialization &s) {
            return s.get(stride) == 0 || s.get(stride) >= s.get(width);
          }};
}

ConstantRule columnsWithin(llvm::StringRef col, llvm::StringRef width,
                           llvm::StringRef stride) {
  return {(col + " + " + width + " <= " + stride + " (" + width + " when " + stride +
           " is 0)")
              .str(),
          {col.str(), width.str(), stride.str()},
          [col = col.str(), width = width.str(),
           stride = stride.str()](const Specialization &s) {
            int64_t row = s.get(stride) ? s.get(stride) : s.get(width);
            return s.get(col) + s.get(width) <= row;
          }};
}

ConstantRule slotsI64NeedsChecks() {
  return {
      "slots_i64 needs checked (the range check keeps each slot offset exact)",
      {"slots_i64", "checked"},
      [](const Specialization &s) { return !s.get("slots_i64") || s.get("checked"); }};
}

KernelConstant aLog() {
  return {"a_log",
          1,
          "1: the A parameter is A_log (A = -exp(A_log)); 0: A itself",
          {},
          R::flag()};
}

KernelConstant dtSoftplus() {
  return {"dt_softplus",
          1,
          "1: dt' = softplus(dt + dt_bias); 0: dt' = dt + dt_bias (then the clamp)",
          {},
          R::flag()};
}

/// 2 in the GEMV projections by default: their first weight loads before the
/// wait made decode faster on the H200
/// (docs/BENCHMARKS.md, "Programmatic dependent launch in decode").
KernelConstant dependent(int64_t byDefault) {
  return {"dependent",
          byDefault,
          "programmatic dependent launch (docs/design.md): 1 wait for the kernels "
          "before at the start, then let the next start; 2 in a GEMV after its first K "
          "group's weight loads (elsewhere as 1); 0 never wait (out_proj's TMA and "
          "persistent forms never do)",
          {},
          R::between(0, 2)};
}

KernelConstant prefetch() {
  return {"prefetch",
          0,
          "1: the first row of programs prefetches its weight rows into L2 before the "
          "wait (rows of a multiple of 16 bytes)",
          {},
          R::flag()};
}

KernelConstant yF32() {
  return {"y_f32", 0, "1: store y as f32 instead of bf16", {}, R::flag()};
}

KernelConstant stateLayout() {
  return {
      "state_layout",
      0,
      "conv page: 0 [slots, channels, 3]; 1 channel-last, [slots, 3, channels] in memory",
      {},
      R::flag()};
}

KernelConstant slotsI64() {
  return {"slots_i64",
          0,
          "1: the slot tables are i64 (read as given, never truncated)",
          {},
          R::flag()};
}

KernelConstant checked() {
  return {
      "checked",
      0,
      "1: tilejit.ops' device-side checks (OpChecks.h): bad indices or metadata write "
      "NaN, touch no state and record an error word (parameters errors, op)",
      {},
      R::flag()};
}

KernelConstant elementType(llvm::StringRef name, llvm::StringRef operand) {
  return {name.str(),
          0,
          ("element type of " + operand + ": 0 bf16, 1 f16, 2 f32").str(),
          {},
          R::between(0, 2)};
}

DType elementTypeOf(const Specialization &spec, llvm::StringRef name) {
  static constexpr DType kTypes[] = {DType::BF16, DType::F16, DType::F32};
  return kTypes[spec.get(name)];
}

KernelConstant projectionBlockM() {
  return {"block_m",
          1,
          "rows per program: 1 (GEMV) or >= 16 (tensor cores)",
          {},
          R::powersOfTwo(1, 256)};
}

KernelConstant projectionStages() {
  return {"stages",
          3,
          "tensor cores: shared-memory buffers of the K loop",
          {},
          stagesRange()};
}

KernelConstant projectionDirect() {
  return {"direct",
          0,
          "1: tensor cores for any batch, operands loaded straight into their "
          "fragments (block_m a multiple of 16)",
          {},
          R::flag()};
}

KernelConstant projectionSplitK() {
  return {"split_k",
          4,
          "direct: warp groups that each sum a part of K (divides warps)",
          {},
          R::powersOfTwo(1, 32)};
}

std::vector<ConstantRule> projectionRules(llvm::StringRef inner) {
  ConstantRule gemvOrTensorCores{
      "block_m is 1 (GEMV), at most 16 (chunked GEMV), at least 8 (skinny) or at "
      "least 16 (tensor cores)",
      {"block_m", "chunked", "skinny"},
      [](const Specialization &s) {
        int64_t bm = s.get("block_m");
        if (s.get("skinny"))
          return bm >= 8 && !s.get("chunked") && !s.get("direct");
        return s.get("chunked") ? bm <= 16 : bm == 1 || bm >= 16;
      }};
  std::string k = inner.str();
  ConstantRule chunks{"with chunked=1: direct is 0, and rows of " + k +
                          " elements and block_k are whole 16-byte chunks",
                      {"chunked", "direct", k, "block_k", "fp8"},
                      [k](const Specialization &s) {
                        const int64_t bytes = s.get("fp8") ? 1 : 2;
                        return !s.get("chunked") ||
                               (!s.get("direct") && s.get(k) * bytes % 16 == 0 &&
                                s.get("block_k") * bytes % 16 == 0);
                      }};
  ConstantRule splitKDividesWarps{
      "with direct=1, split_k divides warps (each warp group sums a part of K)",
      {"direct", "split_k", "warps"},
      [](const Specialization &s) {
        return s.get("direct") == 0 || s.get("warps") % s.get("split_k") == 0;
      }};
  return {gemvOrTensorCores, chunks, splitKDividesWarps,
          quotientAtMost(inner, "block_k", kMaxUnrolledSteps, "GEMV K steps, unrolled")};
}

llvm::Error registerModelKernels(KernelRegistry &registry) {
  std::vector<KernelDef> defs = {gatedRmsNormKernel(), quantizeE4m3Kernel(),
                                 inProjConvKernel(),   ssmUpdateKernel(),
                                 outProjKernel(),      splitKSumKernel()};
  for (KernelDef &def : ssdKernels())
    defs.push_back(std::move(def));
  for (KernelDef def : {ssdStatePassKernel(), convPrefillKernel(), checkVarlenKernel(),
                        varlenPiecesKernel(), convUpdateKernel()})
    defs.push_back(std::move(def));
  for (KernelDef &def : defs)
    if (auto err = registry.add(std::move(def)))
      return err;
  return llvm::Error::success();
}

} // namespace tilejit::models
