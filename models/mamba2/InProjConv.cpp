// Fused decode in_proj -> split -> conv update (docs/numerics.md: R1/R1b, R2,
// R3d): each program projects `block_n` output columns of one row and finishes
// them where they land: z and dt columns are stored, xBC columns go straight
// through the causal conv + SiLU with the conv state shifted in place, so xBC
// never round-trips through memory before the conv. A negative slot is a
// padding row: its conv state is untouched and all its outputs are zero.
// `block_m` 1 is the weight-streaming GEMV of small batches (`chunked` 1: of
// up to 16 rows, the weight read once for all); larger blocks use tensor-core
// tiles for large batches; `direct` 1 uses tensor cores for any
// batch with the operands loaded straight into their fragments (projectDirect).
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {
namespace {

/// The epilogue's row (`axis` 0) or column (1) indices of the [bm, bn] tile
/// whose first is `start`: [bm, 1] or [1, bn], or with `whole` a [bm, bn]
/// tile (the skinny form: with bm < bn a [bm, 1] column would give the
/// epilogue its layout, a whole row of bn elements a thread).
Value tileIndex(bool whole, int axis, Value start, int64_t bm, int64_t bn) {
  if (!whole)
    return expandDims(start + arange(0, axis ? bn : bm), 1 - axis);
  Value flat = reshape(arange(0, bm * bn), {bm, bn});
  return start + (axis ? flat % bn : flat / bn);
}

} // namespace

void buildInProjConv(Kernel &k, const Specialization &spec) {
  const int64_t hidden = spec.get("hidden"), inner = spec.get("inner");
  const int64_t channels = spec.get("channels"), heads = spec.get("heads");
  const int64_t bn = spec.get("block_n"), bk = spec.get("block_k");
  const bool fp8 = spec.get("fp8") != 0;
  const int64_t outCols = inner + channels + heads;
  const DType weightType = fp8 ? DType::F8E4M3 : DType::BF16;
  // quantized_input: x arrives as e4m3 (quantize_e4m3 before), not quantized here.
  const bool quantized = spec.get("quantized_input") != 0;

  Value x = k.ptrParam("x", quantized ? DType::F8E4M3 : DType::BF16,
                       {"rows", hidden});                             // [rows, hidden]
  Value weight = k.ptrParam("weight", weightType, {outCols, hidden}); // [outCols, hidden]
  Value slots = k.ptrParam("slots", DType::I32, {"rows"});            // [rows]
  Value state =
      k.ptrParam("conv_state", DType::BF16, {"?", channels, 3}); // [slots, channels, 3]
  Value convWeight =
      k.ptrParam("conv_weight", DType::BF16, {channels, 4});         // [channels, 4]
  Value convBias = k.ptrParam("conv_bias", DType::BF16, {channels}); // [channels]
  Value z = k.ptrParam("z", DType::BF16, {"rows", inner});           // [rows, inner]
  Value xBC = k.ptrParam("xbc", DType::BF16,
                         {"rows", channels}); // [rows, channels], after the conv
  Value dt = k.ptrParam("dt", DType::BF16, {"rows", heads}); // [rows, heads], raw
  Value rows = k.scalarParam("rows", DType::I32);
  // R1's s_x and s_x * s_w; the bf16 variant (R1b) has neither.
  std::optional<Value> inputScale, outputScale;
  if (fp8) {
    inputScale = k.scalarParam("input_scale", DType::F32);
    outputScale = k.scalarParam("output_scale", DType::F32);
  }
  const int64_t bm = spec.get("block_m");
  View weightView = makeView(weight, {outCols, hidden}, {hidden, 1});
  View xView = makeView(x, {rows, hidden}, {hidden, 1});
  Value n0 = programId(0) * bn, m0 = programId(1) * bm;
  // Programmatic dependent launch (Parts.h): the program's weight rows
  // [n0, n0 + bn) are one contiguous slab, which with `prefetch` the first row
  // of programs brings into L2 while the kernel before drains.
  for (Value invariant : {weight, convWeight, convBias})
    k.markInvariant(invariant);
  const bool chunked = spec.get("chunked") != 0;
  const bool gemv = (bm == 1 || chunked) && !spec.get("direct");
  const bool waitLater =
      dependentStart(spec, weightRows(weight, n0, bn, outCols, hidden, weightType),
                     programId(1) == 0, gemv);
  Value acc; // [bm, bn] f32
  if (spec.get("skinny")) {
    // A few rows: the weight as the mma's M side, read once through the K
    // loop's shared-memory stages, the batch rows its N side.
    k.setConfig({{bn, bm, bk}, spec.get("warps"), spec.get("stages")});
    std::optional<Value> inverse;
    if (inputScale && !quantized)
      inverse = 1.0f / *inputScale;
    acc = projectSkinny({weight, outCols, hidden, x, rows, inverse, 0, hidden}, m0, n0,
                        bm, bn, bk);
  } else if (spec.get("direct")) {
    // Tensor cores for any batch: weights streamed once per program straight
    // into mma fragments (16 bytes a load), K split over warp groups, the
    // activation quantized once per element in its own fragment.
    k.setConfig({{bm, bn, bk}, spec.get("warps"), 1, 8, spec.get("split_k"), true});
    View weightT = makeView(weight, {hidden, outCols}, {1, hidden});
    std::optional<Value> inverse;
    if (inputScale)
      inverse = 1.0f / *inputScale;
    acc = projectDirect(xView, weightT, inverse, m0, n0, bm, bn, hidden, bk,
                        spec.get("loads_in_flight"));
  } else if (chunked) {
    // block_m rows against one read of the weight, in 16-byte chunks. Eight
    // elements per thread, as the GEMV's: the bf16 activation then shares the
    // weight's layout (16 e4m3 a thread would convert it through shared
    // memory every step); two threads read a chunk, a warp 256 bytes in a row.
    const int64_t chunk = vectorWidth(weightType);
    k.setConfig({{bk / chunk, bn, chunk}, spec.get("warps"), 1, 8});
    ChunkedProjection p{weight, outCols, hidden,     weightType, spec.get("packed") != 0,
                        x,      rows,    inputScale, waitLater};
    acc = projectChunked(p, m0, n0, bm, bn, bk, spec.get("loads_in_flight"));
  } else if (bm == 1) {
    // Decode's usual case: one row per program, a weight-streaming GEMV.
    // Eight elements per thread: the bf16 activation (16 bytes) and the
    // weight then share one layout, so neither passes through shared memory.
    k.setConfig({{bn, bk}, spec.get("warps"), 1, 8});
    ProjectionOperands p{weightView, x, hidden, inputScale, waitLater};
    acc = expandDims(projectRow(p, m0, n0, bn, bk, spec.get("loads_in_flight")), 0);
  } else {
    // Large batches: tensor-core tiles; the activation is quantized in the
    // K loop and the weight slab staged through shared memory.
    k.setConfig({{bm, bn, bk}, spec.get("warps"), spec.get("stages")});
    acc = forRange(0, hidden, bk, {zeros({bm, bn}, DType::F32)},
                   [&](Value kk, std::vector<Value> carried) -> std::vector<Value> {
                     Value a = load(xView, {m0, kk}, {bm, bk});
                     if (inputScale)
                       a = (a.to(DType::F32) / *inputScale).to(DType::F8E4M3);
                     Value w = transpose(load(weightView, {n0, kk}, {bn, bk}), {1, 0});
                     return {dot(a, w, carried[0])};
                   })[0];
  }
  if (outputScale)
    acc = acc * *outputScale;
  Value y = acc.to(DType::BF16);

  // The epilogue on [bm, bn]: rows past `rows` are masked like padding rows.
  const bool skinny = spec.get("skinny") != 0;
  Value rowIdx = tileIndex(skinny, 0, m0, bm, bn);
  Value rowOk = rowIdx < rows;
  Value slot = load(slots + rowIdx, rowOk, -1);
  Value live = slot >= 0;
  Value cols = tileIndex(skinny, 1, n0, bm, bn);
  Value zero = zeros({bm, bn}, DType::BF16);
  Value isZ = (cols < inner) & rowOk;
  Value isConv = (cols >= inner) & (cols < inner + channels) & rowOk;
  Value isDt = (cols >= inner + channels) & (cols < outCols) & rowOk;
  Value row64 = rowIdx.to(DType::I64);
  store(z + row64 * inner + cols, where(live, y, zero), isZ);
  store(dt + row64 * heads + (cols - (inner + channels)), where(live, y, zero), isDt);

  // R3d on the xBC columns.
  Value c = cols - inner;
  ConvOperands conv{state, convWeight, convBias, channels};
  store(xBC + row64 * channels + c, convUpdate(conv, slot, live, c, isConv, y), isConv);
}

namespace {

/// The projection's rules, and quantized_input only where the skinny form
/// reads it.
std::vector<ConstantRule> inProjConvRules() {
  std::vector<ConstantRule> rules = projectionRules("hidden");
  rules.push_back({"quantized_input = 1 takes fp8 = 1 and skinny = 1",
                   {"quantized_input", "fp8", "skinny"},
                   [](const Specialization &s) {
                     return !s.get("quantized_input") ||
                            (s.get("fp8") && s.get("skinny"));
                   }});
  return rules;
}

} // namespace

/// Tuned per batch size: its tuning database entries are bucketed by rows.
KernelDef inProjConvKernel() {
  using R = ConstantRange;
  return {"in_proj_conv",
          "decode in_proj (R1 FP8 W8A8 or R1b bf16) -> split -> conv update (R3d), fused",
          {{"hidden", 2688, "model hidden size (K)", {}, sizeRange()},
           {"inner", 4096, "z columns, I = H*P", {}, sizeRange()},
           {"channels", 6144, "xBC columns, I + 2*G*N", {}, sizeRange()},
           {"heads", 64, "dt columns, H", {}, sizeRange()},
           {"fp8",
            1,
            "1: e4m3 weight, static activation quant; 0: bf16 weight",
            {},
            R::flag()},
           projectionBlockM(),
           {"block_n", 16, "output columns per program", {8, 32}, R::powersOfTwo(1, 256)},
           {"block_k", 128, "K per step", {64}, R::powersOfTwo(1, 1024)},
           {"loads_in_flight",
            21,
            "GEMV: K steps whose weight loads issue together",
            {7, 14},
            inFlightRange()},
           projectionStages(),
           {"warps", 4, "warps per program", {2, 8}, warpsRange()},
           projectionDirect(),
           projectionSplitK(),
           projectionChunked(),
           projectionPacked(),
           projectionSkinny(),
           {"quantized_input",
            0,
            "fp8, skinny: 1: x is the activation already quantized to e4m3 "
            "(quantize_e4m3 before), so the K loop's operands both stream through "
            "shared memory",
            {},
            R::flag()},
           dependent(2),
           prefetch()},
          buildInProjConv,
          inProjConvRules(),
          {"rows"},
          chunkedWeightLayouts};
}

} // namespace tilejit::models
