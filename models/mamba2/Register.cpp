// Registration of the model kernels with their constants (NemotronH defaults).
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

namespace {

using R = ConstantRange;
/// Shapes and strides: far past the model's, small enough that every i32
/// column index and offset the kernels form stays exact.
const ConstantRange kSize = R::between(1, 1 << 20);
/// Tile dimensions (a register layout needs powers of two).
const ConstantRange kTile = R::powersOfTwo(1, 1 << 12);
const ConstantRange kWarps = R::powersOfTwo(1, 32);
const ConstantRange kStages = R::between(1, 8);
/// Builder-unrolled loops: K steps of a GEMV, loads issued together.
constexpr int64_t kMaxUnrolledSteps = 256;
const ConstantRange kInFlight = R::between(1, 64);

/// Offsets into a [heads, head_dim, state] page and a channels-wide row are
/// i32 sums in the kernels.
std::vector<ConstantRule> pageRules() {
  return {divides("groups", "heads"),
          productAtMost({"heads", "head_dim", "state"}, INT32_MAX, "i32 page offsets"),
          productAtMost({"groups", "state"}, INT32_MAX / 4, "i32 B/C column offsets")};
}

/// "block_m is 1 (GEMV) or at least 16 (tensor cores)".
ConstantRule gemvOrTensorCores() {
  return {"block_m is 1 (GEMV) or at least 16 (tensor cores)",
          {"block_m"},
          [](const Specialization &s) {
            int64_t bm = s.get("block_m");
            return bm == 1 || bm >= 16;
          }};
}

ConstantRule splitKDividesWarps() {
  return {"with direct=1, split_k divides warps (each warp group sums a part of K)",
          {"direct", "split_k", "warps"},
          [](const Specialization &s) {
            return s.get("direct") == 0 || s.get("warps") % s.get("split_k") == 0;
          }};
}

// Constants more than one kernel takes for tilejit.ops' callers (PyTorch's
// conventions); their defaults build the kernels the plans use.
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
/// `dependent` defaults to 2 in the GEMV projections: their first weight loads
/// before the wait took decode from 27.81 to 27.35 us per layer at B = 1 on
/// the H200 (docs/BENCHMARKS.md, "programmatic dependent launch").
KernelConstant dependent(int64_t byDefault = 1) {
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
/// i64 slot tables are range-checked on the device before any slot becomes an
/// offset, so they come only with the checks.
ConstantRule slotsI64NeedsChecks() {
  return {
      "slots_i64 needs checked (the range check keeps each slot offset exact)",
      {"slots_i64", "checked"},
      [](const Specialization &s) { return !s.get("slots_i64") || s.get("checked"); }};
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

/// "`stride` is 0 (the row is `width` wide) or at least `width`": a kernel
/// reading its rows in place from a wider one.
ConstantRule zeroOrAtLeast(llvm::StringRef stride, llvm::StringRef width) {
  return {(stride + " is 0 or at least " + width).str(),
          {stride.str(), width.str()},
          [stride = stride.str(), width = width.str()](const Specialization &s) {
            return s.get(stride) == 0 || s.get(stride) >= s.get(width);
          }};
}

/// Columns `col` + [0, width) lie within a row of `stride` (0: of width, so
/// `col` must be 0): a kernel reading a slice of a wider row in place.
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

/// A row stride (0: the default width), or a count of columns around the ones
/// a kernel reads where none is allowed (tilejit.ops' causal_conv1d_fn passes
/// an xBC row without z or dt): up to kSize.
const ConstantRange kColumns = R::between(0, 1 << 20);

} // namespace

llvm::Error registerModelKernels(KernelRegistry &registry) {
  if (auto err = registry.add(
          {"gated_rmsnorm",
           "R6 gated group RMSNorm: bf16(w * bf16(y*silu(z) * rsqrt(mean(v^2)+eps)))",
           {{"width", 4096, "channels per row (I = H*P)", {}, kSize},
            {"group_size", 512, "channels per norm group (I / G)", {}, kTile},
            {"fp8_out",
             0,
             "1: store e4m3(out / input_scale) for an FP8 out_proj",
             {},
             R::flag()},
            {"z_stride",
             0,
             "row stride of z; 0: width (10304 reads z in place from in_proj's output)",
             {},
             kColumns},
            {"gate", 1, "0: no z, v = y (a plain group RMSNorm)", {}, R::flag()},
            dependent()},
           buildGatedRmsNorm,
           // A partial last group would be normalized over fewer channels
           // than it divides by.
           {divides("group_size", "width"), zeroOrAtLeast("z_stride", "width")}}))
    return err;
  if (auto err =
          registry.add({"quantize_e4m3",
                        "R1's static activation quant: e4m3(x * (1 / s_x)), bf16 in",
                        {{"width", 2688, "columns per row", {}, kSize},
                         {"block", 1024, "columns per program", {}, kTile},
                         {"scale_ptr",
                          0,
                          "1: input_scale is a one-element f32 tensor",
                          {},
                          R::flag()}},
                        buildQuantizeE4m3}))
    return err;
  if (auto err = registry.add(
          {"in_proj_conv",
           "decode in_proj (R1 FP8 W8A8 or R1b bf16) -> split -> conv update (R3d), "
           "fused",
           {{"hidden", 2688, "model hidden size (K)", {}, kSize},
            {"inner", 4096, "z columns, I = H*P", {}, kSize},
            {"channels", 6144, "xBC columns, I + 2*G*N", {}, kSize},
            {"heads", 64, "dt columns, H", {}, kSize},
            {"fp8",
             1,
             "1: e4m3 weight, static activation quant; 0: bf16 weight",
             {},
             R::flag()},
            {"block_m",
             1,
             "rows per program: 1 (GEMV) or >= 16 (tensor cores)",
             {},
             R::powersOfTwo(1, 256)},
            {"block_n",
             16,
             "output columns per program",
             {8, 32},
             R::powersOfTwo(1, 256)},
            {"block_k", 128, "K per step", {64}, R::powersOfTwo(1, 1024)},
            {"loads_in_flight",
             21,
             "GEMV: K steps whose weight loads issue together",
             {7, 14},
             kInFlight},
            {"stages",
             3,
             "tensor cores: shared-memory buffers of the K loop",
             {},
             kStages},
            {"warps", 4, "warps per program", {2, 8}, kWarps},
            {"direct",
             0,
             "1: tensor cores for any batch, operands loaded straight into their "
             "fragments "
             "(block_m a multiple of 16)",
             {},
             R::flag()},
            {"split_k",
             4,
             "direct: warp groups that each sum a part of K (divides warps)",
             {},
             R::powersOfTwo(1, 32)},
            dependent(2),
            prefetch()},
           buildInProjConv,
           {gemvOrTensorCores(), splitKDividesWarps(),
            quotientAtMost("hidden", "block_k", kMaxUnrolledSteps,
                           "GEMV K steps, unrolled")}}))
    return err;
  if (auto err =
          registry.add({"ssm_update",
                        "R5d selective state update, SSM page updated in place",
                        {{"heads", 64, "SSM heads (H)", {}, kSize},
                         {"head_dim", 64, "head dim (P)", {}, kSize},
                         {"state", 128, "state size (N)", {}, kTile},
                         {"groups", 8, "B/C groups (G)", {}, kSize},
                         {"block_p", 16, "state rows (p) per program", {}, kTile},
                         {"warps", 4, "warps per program", {}, kWarps},
                         aLog(),
                         dtSoftplus(),
                         {"dt_stride", 0, "row stride of dt; 0: heads", {}, kColumns},
                         {"dt_col", 0, "first dt column in that row", {}, kColumns},
                         yF32(),
                         {"dst_slots",
                          0,
                          "1: read the state from slots, write it to dst_slots",
                          {},
                          R::flag()},
                         slotsI64(),
                         checked(),
                         dependent()},
                        buildSsmUpdate,
                        [] {
                          std::vector<ConstantRule> rules = pageRules();
                          rules.push_back(zeroOrAtLeast("dt_stride", "heads"));
                          rules.push_back(columnsWithin("dt_col", "heads", "dt_stride"));
                          rules.push_back(slotsI64NeedsChecks());
                          return rules;
                        }()}))
    return err;
  if (auto err = registry.add(
          {"out_proj",
           "decode out_proj: R1 with e4m3 activations, or R1b bf16",
           {{"inner", 4096, "K, I = H*P", {}, kSize},
            {"hidden", 2688, "output columns", {}, kSize},
            {"fp8", 1, "1: e4m3 weight and activation; 0: bf16", {}, R::flag()},
            {"block_m",
             1,
             "rows per program: 1 (GEMV) or >= 16 (tensor cores)",
             {},
             R::powersOfTwo(1, 256)},
            {"block_n", 4, "output columns per program", {}, R::powersOfTwo(1, 256)},
            {"block_k", 512, "K per step", {}, R::powersOfTwo(1, 1024)},
            {"loads_in_flight",
             8,
             "GEMV: K steps whose weight loads issue together",
             {},
             kInFlight},
            {"stages",
             3,
             "tensor cores: shared-memory buffers of the K loop",
             {},
             kStages},
            {"warps", 4, "warps per program", {}, kWarps},
            {"direct",
             0,
             "1: tensor cores for any batch, operands loaded straight into their "
             "fragments "
             "(block_m a multiple of 16)",
             {},
             R::flag()},
            {"split_k",
             4,
             "direct: warp groups that each sum a part of K (divides warps)",
             {},
             R::powersOfTwo(1, 32)},
            {"out_f32", 0, "1: store y as f32 instead of bf16", {}, R::flag()},
            {"scale_ptr",
             0,
             "fp8: 1: s_x and s_w as one-element f32 tensors (scale_a, scale_b)",
             {},
             R::flag()},
            {"producer",
             0,
             "tensor cores, an arch with TMA: the K loop's operands come by TMA; 1: "
             "issued by a producer warp(group), 2: by one consumer thread",
             {1},
             R::between(0, 2)},
            {"persistent",
             0,
             "tensor cores: G >= 1: one program per multiprocessor walks the tiles, G "
             "columns of tiles at a time",
             {8},
             R::between(0, 64)},
            dependent(2),
            prefetch()},
           buildOutProj,
           {gemvOrTensorCores(), splitKDividesWarps(),
            quotientAtMost("inner", "block_k", kMaxUnrolledSteps,
                           "GEMV K steps, unrolled")}}))
    return err;
  // ssd_prefill and ssd_span_state: one chunk loop, the same constants.
  std::vector<ConstantRule> ssdRules = pageRules();
  // dt is read at columns dt_col + [0, heads) of rows dt_stride apart.
  ssdRules.push_back({"dt_col + heads <= dt_stride",
                      {"dt_col", "heads", "dt_stride"},
                      [](const Specialization &s) {
                        return s.get("dt_col") + s.get("heads") <= s.get("dt_stride");
                      }});
  const std::vector<KernelConstant> ssdConstants = {
      {"heads", 64, "SSM heads (H)", {}, kSize},
      {"head_dim", 64, "head dim (P)", {}, kSize},
      {"state", 128, "state size (N)", {}, kTile},
      {"groups", 8, "B/C groups (G)", {}, kSize},
      {"chunk",
       32,
       "tokens per chunk (R5p is invariant to it; the varlen metadata must use it)",
       {},
       R::powersOfTwo(1, 256)},
      {"dt_stride",
       10304,
       "row stride of dt (in_proj's output row: z | xBC | dt)",
       {},
       kSize},
      {"dt_col", 10240, "first dt column in that row", {}, kColumns},
      {"block_p", 32, "state rows (p) per program", {16, 64}, kTile},
      {"warps", 4, "warps per program", {8}, kWarps},
      {"precision",
       int64_t(SsdPrecision::Exact),
       "R5p-m operands of the tensor-core products: 0 exact (hi + lo bf16 "
       "pairs), 1 upstream (single bf16)",
       {},
       R::flag()},
      aLog(),
      dtSoftplus()};
  std::vector<KernelConstant> prefillConstants = ssdConstants;
  prefillConstants.push_back(yF32());
  prefillConstants.push_back(checked());
  prefillConstants.push_back(
      {"span_states",
       0,
       "1: one program walks one span of chunks (span_chunk) from its entering state "
       "(span_states, after ssd_state_pass); 0: the whole stream; pages read and "
       "written at the sequences' first and last chunks either way",
       {},
       R::flag()});
  std::vector<ConstantRule> prefillRules = ssdRules;
  prefillRules.push_back({"checked walks the whole stream (span_states = 0)",
                          {"checked", "span_states"},
                          [](const Specialization &s) {
                            return !(s.get("checked") && s.get("span_states"));
                          }});
  if (auto err =
          registry.add({"ssd_prefill",
                        "R5p chunked SSD over a packed varlen stream (or one span of it)",
                        std::move(prefillConstants), buildSsdPrefill, prefillRules}))
    return err;
  if (auto err = registry.add({"ssd_span_state",
                               "R5p's chunk states summed over each span's tail (from "
                               "its last sequence start) from zero, and the tail's decay",
                               ssdConstants, buildSsdSpanState, ssdRules}))
    return err;
  if (auto err = registry.add(
          {"ssd_state_pass",
           "R5p's state passing over spans: each span's entering state",
           {{"heads", 64, "SSM heads (H)", {}, kSize},
            {"head_dim", 64, "head dim (P)", {}, kSize},
            {"state", 128, "state size (N)", {}, kTile},
            {"block",
             1024,
             "state elements (of head_dim x state) per program",
             {},
             kTile},
            {"warps", 4, "warps per program", {8}, kWarps}},
           buildSsdStatePass,
           {{"block divides head_dim * state",
             {"block", "head_dim", "state"},
             [](const Specialization &s) {
               return (s.get("head_dim") * s.get("state")) % s.get("block") == 0;
             }},
            productAtMost({"heads", "head_dim", "state"}, INT32_MAX,
                          "i32 page offsets")}}))
    return err;
  if (auto err = registry.add(
          {"conv_prefill",
           "R3 causal conv1d + SiLU over a packed varlen batch, conv pages read and "
           "written",
           {{"inner", 4096, "z columns before xBC in zxbcdt (I = H*P)", {}, kColumns},
            {"channels", 6144, "conv channels (I + 2*G*N)", {}, kSize},
            {"heads", 64, "dt columns after xBC in zxbcdt (H)", {}, kColumns},
            // A chunk after a sequence's first starts >= block_t >= 3 tokens
            // in, so its halo lies inside the sequence; steps of >= 3 rows
            // hold the next halo.
            {"block_t",
             64,
             "tokens per chunk: a power of two >= 4 (the host chunks by it)",
             {},
             R::powersOfTwo(4, 1024)},
            {"block_c",
             1024,
             "channels per program (256 * warps: 16-byte accesses)",
             {},
             kTile},
            {"rows_per_step",
             8,
             "token rows whose loads issue together (divides block_t)",
             {},
             R::between(3, 64)},
            {"fast_silu",
             1,
             "1: silu as x * rsqrt(1 + e^-x)^2, no division; 0: the IEEE quotient",
             {},
             R::flag()},
            {"warps", 4, "warps per program", {}, kWarps},
            stateLayout(),
            slotsI64(),
            checked()},
           buildConvPrefill,
           {divides("rows_per_step", "block_t"), slotsI64NeedsChecks()}}))
    return err;
  if (auto err = registry.add(
          {"check_varlen",
           "tilejit.ops' device-side check of varlen metadata (R9): cu_seqlens, and with "
           "chunks the caller's chunk boundaries, seq_idx and last_chunk_indices",
           {{"index_i64", 0, "1: the index tensors are i64; 0: i32", {}, R::flag()},
            {"chunks",
             0,
             "1: also cu_chunk_seqlens, seq_idx and last_chunk_indices",
             {},
             R::flag()},
            {"block", 1024, "entries per step", {}, kTile},
            {"warps", 4, "warps per program", {}, kWarps}},
           buildCheckVarlen}))
    return err;
  return registry.add(
      {"conv_update",
       "R3d causal conv1d update + SiLU, conv state shifted in place",
       {{"channels", 6144, "conv channels (I + 2*G*N)", {}, kSize},
        {"block", 256, "channels per program", {}, kTile},
        {"x_stride",
         0,
         "row stride of x; 0: channels (x read in place from a wider row)",
         {},
         kColumns},
        {"x_col", 0, "first x column in that row", {}, kColumns},
        stateLayout(),
        slotsI64(),
        checked(),
        dependent()},
       buildConvUpdate,
       {zeroOrAtLeast("x_stride", "channels"),
        columnsWithin("x_col", "channels", "x_stride"), slotsI64NeedsChecks()}});
}

} // namespace tilejit::models
