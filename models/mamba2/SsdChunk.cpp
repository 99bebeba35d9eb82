// R5p's chunk step (docs/numerics.md#r5p-chunked-ssd-prefill): cumsum, chunk state,
// CB and output of one chunk. The tensor cores take bf16: every f32 operand of a
// product (the decayed CB mix, the carried state, the decayed dt x, and x, B or C
// when a caller passes them in f16 or f32) enters as a hi + lo bf16 pair
// (SsdPrecision::Exact), as a single bf16 value (SsdPrecision::UpstreamBF16), or
// the state and the inputs as pairs, the mix and dt x single (SplitState).
#include "SsdChunk.h"
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>

namespace tilejit::models {

/// v as hi + lo bf16 halves: a tensor-core product of both halves with an
/// exact bf16 operand carries v to ~16 bits instead of bf16's 8 (an f16 value
/// exactly). Plain bf16 operands put y elements outside R5p's band at T = 8192
/// on the H200; splitting the state alone, or the state and the mix, leaves
/// some outside, splitting all three none (docs/BENCHMARKS.md, "The SSD", its
/// precision figures). The lo half is null in SsdPrecision::UpstreamBF16 (v
/// rounded once).
Halves splitBF16(Value v, bool exact) {
  Value hi = v.to(DType::BF16);
  if (!exact)
    return {hi, Value()};
  return {hi, (v - hi.to(DType::F32)).to(DType::BF16)};
}

Halves halves(Value v, bool exact) {
  if (v.dtype() == DType::BF16)
    return {v, Value()};
  return splitBF16(v.to(DType::F32), exact);
}

Halves transposeBoth(Halves h) {
  return {transpose(h.first, {1, 0}),
          h.second.valid() ? transpose(h.second, {1, 0}) : Value()};
}

Value dotHalves(Halves a, Halves b, Value acc) {
  acc = dot(a.first, b.first, acc);
  if (a.second.valid())
    acc = dot(a.second, b.first, acc);
  return b.second.valid() ? dot(a.first, b.second, acc) : acc;
}

ConstantRule ssdStrideRule(const char *stride, const char *a, const char *b) {
  return {std::string(stride) + " is 0 or at least " + a + " * " + b,
          {stride, a, b},
          [stride, a, b](const Specialization &s) {
            return s.get(stride) == 0 || s.get(stride) >= s.get(a) * s.get(b);
          }};
}

SsdShape::SsdShape(const Specialization &spec)
    : heads(spec.get("heads")), headDim(spec.get("head_dim")),
      stateSize(spec.get("state")), groups(spec.get("groups")), q(spec.get("chunk")),
      bp(spec.get("block_p")), dtStride(spec.get("dt_stride")), dtCol(spec.get("dt_col")),
      inner(heads * headDim), channels(inner + 2 * groups * stateSize),
      stateTile(std::max<int64_t>(16, int64_t(llvm::PowerOf2Ceil(uint64_t(stateSize))))),
      splitXBC(spec.get("split_xbc") != 0),
      xStride(spec.get("x_stride") ? spec.get("x_stride") : inner),
      bStride(spec.get("b_stride") ? spec.get("b_stride") : groups * stateSize),
      cStride(spec.get("c_stride") ? spec.get("c_stride") : groups * stateSize),
      xType(elementTypeOf(spec, "x_type")), bcType(elementTypeOf(spec, "bc_type")),
      dtType(elementTypeOf(spec, "dt_type")), aType(elementTypeOf(spec, "a_type")),
      dtBiasType(elementTypeOf(spec, "dt_bias_type")), aIsLog(spec.get("a_log") != 0),
      softplusDt(spec.get("dt_softplus") != 0),
      exact(SsdPrecision(spec.get("precision")) != SsdPrecision::UpstreamBF16),
      exactMix(SsdPrecision(spec.get("precision")) == SsdPrecision::Exact) {}

void SsdInputs::loadHead(const SsdShape &g, Value h) {
  Value aValue = load(aParam + h).to(DType::F32);
  a = g.aIsLog ? -exp(aValue) : aValue;
  bias = load(dtBias + h).to(DType::F32);
}

SsdInputs SsdInputs::declare(Kernel &k, const SsdShape &g) {
  SsdInputs in;
  if (g.splitXBC) {
    in.x = k.ptrParam("x", g.xType, {"?", g.xStride});  // [T, x_stride]
    in.b = k.ptrParam("b", g.bcType, {"?", g.bStride}); // [T, b_stride]
    in.c = k.ptrParam("c", g.bcType, {"?", g.cStride}); // [T, c_stride]
  } else {
    in.x = k.ptrParam("xbc", g.xType, {"?", g.channels}); // [T, channels]
  }
  // [T, dt_stride]: dt at columns dt_col + [0, heads)
  in.dtRaw = k.ptrParam("dt", g.dtType, {"?", g.dtStride});
  in.aParam = k.ptrParam(g.aIsLog ? "a_log" : "a", g.aType, {g.heads});
  in.dtBias = k.ptrParam("dt_bias", g.dtBiasType, {g.heads});
  return in;
}

RowSlice rowSlice(Value row, Value first, Dim rows, int64_t width, int64_t stride,
                  DType type) {
  RowSlice s{View(), Value(), row, first, rows, width, stride, type};
  if (width % vectorWidth(type) == 0) {
    s.start = row + first;
    s.view = makeView(s.start, {rows, width}, {stride, 1});
  } else {
    s.view = makeView(row, {rows, Dim(first + width)}, {stride, 1});
  }
  return s;
}

RowSlice RowSlice::shifted(int64_t columns) const {
  if (!start.valid())
    return rowSlice(row, first + columns, rows, width, stride, type);
  RowSlice s = *this;
  s.start = start + columns;
  s.view = makeView(s.start, {rows, width}, {stride, 1});
  return s;
}

namespace {

/// dt of `rows` tokens from rowBase for head h as read, 0 past `len`.
Value loadDt(const SsdShape &g, const SsdInputs &in, Value h, Value rowBase, Value len,
             int64_t rows) {
  return load(
      makeView(in.dtRaw + rowBase * g.dtStride + g.dtCol + h, {Dim(len)}, {g.dtStride}),
      {0}, {rows});
}

/// R4's dt' of the `rows` tokens loadDt read.
Value dtOf(const SsdShape &g, const SsdInputs &in, Value raw, Value len, int64_t rows) {
  // R4: dt' = clamp(softplus(dt + bias)), 0 on padded rows.
  Value dtIn = raw.to(DType::F32) + in.bias;
  return where(arange(0, rows) < len,
               minimum(maximum(g.softplusDt ? softplus(dtIn) : dtIn, in.dtMin), in.dtMax),
               0.0);
}

} // namespace

Value chunkDt(const SsdShape &g, const SsdInputs &in, Value h, Value rowBase, Value len,
              int64_t rows) {
  return dtOf(g, in, loadDt(g, in, h, rowBase, len, rows), len, rows);
}

Value decayedMix(Value cb, Value lamI, Value lamJ, Value dtJ, Value causal) {
  Value decay = exp(minimum(expandDims(lamI, 1) - expandDims(lamJ, 0), 0.0));
  Value mix = cb * decay * expandDims(dtJ, 0);
  return causal.valid() ? where(causal, mix, 0.0) : mix;
}

GuardedX guardNonFinite(Value x) {
  Value finite = abs(x.to(DType::F32)) < double(INFINITY);
  const Shape shape = x.shape();
  return {finite,
          where(finite, zeros(shape, DType::F32), full(shape, double(NAN), DType::F32))};
}

Value GuardedX::x(Value raw) const {
  return where(finite, raw, zeros(raw.shape(), raw.dtype()));
}

ChunkTiles loadChunkTiles(const SsdShape &g, const SsdInputs &in, Value h, Value p0,
                          Value rowBase, Value len, bool withC) {
  ChunkTiles c;
  Value group = h / (g.heads / g.groups);
  const Shape bcTile = {g.q, g.stateTile};
  auto loadSlice = [&](const RowSlice &slice, Operand col, const Shape &shape) {
    return load(slice.view, {0, slice.at(col)}, shape);
  };
  const Dim rows(len);
  if (g.splitXBC) {
    Value xRow = in.x + rowBase * g.xStride;
    c.x = loadSlice(rowSlice(xRow, h * g.headDim, rows, g.headDim, g.xStride, g.xType),
                    p0, {g.q, g.bp});
    Value bRow = in.b + rowBase * g.bStride;
    c.b = loadSlice(
        rowSlice(bRow, group * g.stateSize, rows, g.stateSize, g.bStride, g.bcType), 0,
        bcTile);
    if (withC) {
      Value cRow = in.c + rowBase * g.cStride;
      c.cm = loadSlice(
          rowSlice(cRow, group * g.stateSize, rows, g.stateSize, g.cStride, g.bcType), 0,
          bcTile);
    }
  } else {
    Value xRow = in.x + rowBase * g.channels;
    c.x = loadSlice(rowSlice(xRow, h * g.headDim, rows, g.headDim, g.channels, g.xType),
                    p0, {g.q, g.bp});
    Value bcRow = in.x + rowBase * g.channels + g.inner;
    RowSlice b =
        rowSlice(bcRow, group * g.stateSize, rows, g.stateSize, g.channels, g.xType);
    c.b = loadSlice(b, 0, bcTile);
    if (withC)
      c.cm = loadSlice(b.shifted(g.groups * g.stateSize), 0, bcTile);
  }
  c.dt = loadDt(g, in, h, rowBase, len, g.q);
  return c;
}

Chunk chunkOf(const SsdShape &g, const SsdInputs &in, Value rowBase, Value len,
              const ChunkTiles &tiles) {
  Chunk c{len, rowBase, tiles.x, tiles.b, tiles.cm};
  // R5p step 1: dt' and its decay cumsum.
  c.dt = dtOf(g, in, tiles.dt, len, g.q);
  c.lam = cumsum(c.dt * in.a, 0);
  c.lamEnd = sum(c.dt * in.a, 0);
  return c;
}

Chunk loadChunk(const SsdShape &g, const SsdInputs &in, Value h, Value p0, Value t0,
                Value t1, bool withC) {
  Value len = t1 - t0, rowBase = t0.to(DType::I64);
  return chunkOf(g, in, rowBase, len, loadChunkTiles(g, in, h, p0, rowBase, len, withC));
}

Value stateAfter(const SsdShape &g, const Chunk &c, Value s) {
  // S_out = exp(L_end) S_in + sum_i exp(L_end - L_i) dt_i x_i (x) B_i.
  Value w = exp(minimum(c.lamEnd - c.lam, 0.0)) * c.dt;
  return dotHalves(
      transposeBoth(splitBF16(c.x.to(DType::F32) * expandDims(w, 1), g.exactMix)),
      halves(c.b, g.exact), s * exp(c.lamEnd));
}

/// y = exp(L_i) C_i S_in + sum_j<=i CB_ij exp(L_i - L_j) dt_j x_j + D x_i.
/// A NaN or Inf entering at token t changes no output before t (R5 is
/// sequential): the upper triangle of the mix is selected away, never
/// multiplied by zero. A product of tiles adds 0 x NaN = NaN, so a chunk
/// whose x is not all finite (`finiteX` false) takes the mix product with x
/// finite (a non-finite x as 0) and lets each non-finite x reach y from its
/// own token on through `poison`, the running sum of NaN markers down each
/// column; the scan costs a fifth of the kernel, so finite chunks skip it.
Value chunkOutput(const SsdShape &g, const Chunk &c, Value s, Value dCoef, bool finiteX) {
  Value causal = causalMask(g.q);
  Halves cm = halves(c.cm, g.exact);
  Value cb =
      dotHalves(cm, transposeBoth(halves(c.b, g.exact)), zeros({g.q, g.q}, DType::F32));
  Value mixF = decayedMix(cb, c.lam, c.lam, c.dt, causal);
  Value xF = c.x.to(DType::F32);
  Value yTile;
  if (finiteX) {
    yTile = dotHalves(splitBF16(mixF, g.exactMix), halves(c.x, g.exact),
                      zeros({g.q, g.bp}, DType::F32));
  } else {
    GuardedX guarded = guardNonFinite(c.x);
    Value poison = cumsum(guarded.markers, 0);
    yTile = dotHalves(splitBF16(mixF, g.exactMix), halves(guarded.x(c.x), g.exact),
                      zeros({g.q, g.bp}, DType::F32)) +
            poison;
  }
  // Split, then transpose each bf16 half: a transpose feeding a dot
  // operand folds into the operand's one trip through shared memory.
  Value carry =
      dotHalves(cm, transposeBoth(splitBF16(s, g.exact)), zeros({g.q, g.bp}, DType::F32));
  return yTile + carry * expandDims(exp(c.lam), 1) + xF * dCoef;
}

Value causalMask(int64_t rows) {
  return expandDims(arange(0, rows), 1) >= expandDims(arange(0, rows), 0);
}

Value anyNonFinite(const Chunk &c) {
  const Shape shape = c.x.shape();
  Value bad = where(abs(c.x.to(DType::F32)) < double(INFINITY), zeros(shape, DType::F32),
                    full(shape, 1.0, DType::F32));
  return max(max(bad, 1), 0) > 0.0;
}

OutputParams::OutputParams(const Specialization &spec, const SsdShape &g)
    : yType(spec.get("y_f32") ? DType::F32 : elementTypeOf(spec, "y_type")),
      dType(elementTypeOf(spec, "d_type")), zType(elementTypeOf(spec, "z_type")),
      dPerP(spec.get("d_per_p") != 0), gated(spec.get("gate") != 0),
      zStride(spec.get("z_stride") ? spec.get("z_stride") : g.inner) {}

void OutputParams::declareD(Kernel &k, const SsdShape &g) {
  d = k.ptrParam("d", dType,
                 dPerP ? std::vector<ParamDim>{g.heads, g.headDim}
                       : std::vector<ParamDim>{g.heads});
}

void OutputParams::declareZ(Kernel &k) {
  if (gated)
    z = k.ptrParam("z", zType, {"?", zStride});
}

Value OutputParams::skip(const SsdShape &g, Value h, Value p0) const {
  if (!dPerP)
    return load(d + h).to(DType::F32);
  RowSlice row = rowSlice(d, h * g.headDim, 1, g.headDim, g.headDim, dType);
  return load(row.view, {0, row.at(p0)}, {1, g.bp}).to(DType::F32);
}

Value OutputParams::gate(const SsdShape &g, Value rowBase, Value len, Value h, Value p0,
                         int64_t rows) const {
  if (!z.valid())
    return Value();
  RowSlice zs =
      rowSlice(z + rowBase * zStride, h * g.headDim, Dim(len), g.headDim, zStride, zType);
  return silu(load(zs.view, {0, zs.at(p0)}, {rows, g.bp}).to(DType::F32));
}

View stateView(Value base, Value index, Value h, const SsdShape &g, Dim rows) {
  Value at = base + (index.to(DType::I64) * g.heads + h.to(DType::I64)) *
                        (g.headDim * g.stateSize);
  return makeView(at, {rows, g.stateSize}, {g.stateSize, 1});
}

KernelConstant elementTypeF32(llvm::StringRef name, llvm::StringRef operand) {
  KernelConstant c = elementType(name, operand);
  c.defaultValue = 2;
  return c;
}

std::vector<KernelConstant> ssdConstants() {
  using R = ConstantRange;
  return {{"heads", 64, "SSM heads (H)", {}, sizeRange()},
          {"head_dim", 64, "head dim (P)", {}, sizeRange()},
          {"state", 128, "state size (N)", {}, sizeRange()},
          {"groups", 8, "B/C groups (G)", {}, sizeRange()},
          {"chunk",
           32,
           "tokens per chunk (R5p is invariant to it; the varlen metadata must use it)",
           {},
           R::powersOfTwo(1, 256)},
          {"dt_stride",
           10304,
           "row stride of dt (in_proj's output row: z | xBC | dt)",
           {},
           sizeRange()},
          {"dt_col", 10240, "first dt column in that row", {}, columnsRange()},
          {"block_p", 32, "state rows (p) per program", {16, 64}, tileRange()},
          {"warps", 4, "warps per program", {8}, warpsRange()},
          {"precision",
           int64_t(SsdPrecision::Exact),
           "R5p-m operands of the tensor-core products: 0 exact (hi + lo bf16 "
           "pairs), 1 upstream (single bf16), 2 split state (the carried state "
           "hi + lo, the mix and dt x single)",
           {},
           R::between(0, 2)},
          aLog(),
          dtSoftplus(),
          {"split_xbc",
           0,
           "1: x, B and C are three tensors (x, b, c) of rows x_stride, b_stride, "
           "c_stride apart; 0: column ranges of one xBC row (xbc)",
           {},
           R::flag()},
          {"x_stride",
           0,
           "row stride of x with split_xbc (0: heads * head_dim)",
           {},
           columnsRange()},
          {"b_stride",
           0,
           "row stride of B with split_xbc (0: groups * state)",
           {},
           columnsRange()},
          {"c_stride",
           0,
           "row stride of C with split_xbc (0: groups * state)",
           {},
           columnsRange()},
          elementType("x_type", "x"),
          elementType("bc_type", "B and C"),
          elementType("dt_type", "dt"),
          elementTypeF32("a_type", "A (or a_log)"),
          elementTypeF32("dt_bias_type", "dt_bias")};
}

std::vector<KernelConstant> ssdOutputConstants() {
  using R = ConstantRange;
  return {
      elementType("y_type", "y (when y_f32 is 0)"),
      {"gate", 0, "1: y silu(z), z [T, z_stride] (vLLM's z)", {}, R::flag()},
      elementType("z_type", "z"),
      {"z_stride", 0, "row stride of z (0: heads * head_dim)", {}, columnsRange()},
      {"d_per_p", 0, "1: D per (head, p), [heads, head_dim]; 0: per head", {}, R::flag()},
      elementTypeF32("d_type", "D")};
}

std::vector<ConstantRule> ssdRules() {
  std::vector<ConstantRule> rules = pageRules();
  // dt is read at columns dt_col + [0, heads) of rows dt_stride apart.
  rules.push_back({"dt_col + heads <= dt_stride",
                   {"dt_col", "heads", "dt_stride"},
                   [](const Specialization &s) {
                     return s.get("dt_col") + s.get("heads") <= s.get("dt_stride");
                   }});
  rules.push_back(ssdStrideRule("x_stride", "heads", "head_dim"));
  rules.push_back(ssdStrideRule("b_stride", "groups", "state"));
  rules.push_back(ssdStrideRule("c_stride", "groups", "state"));
  // One xBC row holds x, B and C in one element type.
  rules.push_back({"split_xbc or bc_type = x_type",
                   {"split_xbc", "bc_type", "x_type"},
                   [](const Specialization &s) {
                     return s.get("split_xbc") || s.get("bc_type") == s.get("x_type");
                   }});
  return rules;
}

} // namespace tilejit::models
