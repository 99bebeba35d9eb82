// Example kernels that double as lowering regression tests: one per op family
// (elementwise, reduction, scan, bf16 and e4m3 matrix products).
#include "tilejit/models/examples/ExampleKernels.h"

namespace tilejit::models {
namespace {

/// out[i] = x[i] + y[i], BLOCK elements per program.
void buildVectorAdd(Kernel &k, const Specialization &spec) {
  const int64_t block = spec.get("block");
  Value x = k.ptrParam("x", DType::F32), y = k.ptrParam("y", DType::F32);
  Value out = k.ptrParam("out", DType::F32);
  Value n = k.scalarParam("n", DType::I32);
  k.setConfig({{block}, spec.get("warps"), 1, 4});
  View xv = makeView(x, {n}, {1}), yv = makeView(y, {n}, {1}),
       ov = makeView(out, {n}, {1});
  Value start = programId(0) * block;
  store(ov, {start}, load(xv, {start}, {block}) + load(yv, {start}, {block}));
}

/// Row softmax of x[rows, cols] (cols <= BLOCK), one row per program.
void buildSoftmax(Kernel &k, const Specialization &spec) {
  const int64_t block = spec.get("block");
  Value x = k.ptrParam("x", DType::F32), out = k.ptrParam("out", DType::F32);
  Value rows = k.scalarParam("rows", DType::I32),
        cols = k.scalarParam("cols", DType::I32);
  k.setConfig({{1, block}, spec.get("warps")});
  View xv = makeView(x, {rows, cols}, {cols, 1});
  View ov = makeView(out, {rows, cols}, {cols, 1});
  Value row = programId(0);
  Value t = load(xv, {row, 0}, {1, block}, -INFINITY);
  Value e = exp(t - expandDims(max(t, 1), 1));
  store(ov, {row, 0}, e / expandDims(sum(e, 1), 1));
}

/// Inclusive cumulative sum of each row of x[rows, cols] (cols <= BLOCK).
void buildCumsum(Kernel &k, const Specialization &spec) {
  const int64_t block = spec.get("block");
  Value x = k.ptrParam("x", DType::F32), out = k.ptrParam("out", DType::F32);
  Value rows = k.scalarParam("rows", DType::I32),
        cols = k.scalarParam("cols", DType::I32);
  k.setConfig({{block}, spec.get("warps")});
  View xv = makeView(x, {rows, cols}, {cols, 1});
  View ov = makeView(out, {rows, cols}, {cols, 1});
  Value row = programId(0);
  store(ov, {row, 0},
        expandDims(cumsum(reshape(load(xv, {row, 0}, {1, block}), {block}), 0), 0));
}

/// c[M, N] = bf16(a[M, K] x b[K, N]), bf16 operands, f32 accumulation.
void buildGemmBf16(Kernel &k, const Specialization &spec) {
  const int64_t n = spec.get("n"), kDim = spec.get("k");
  const int64_t bm = spec.get("block_m"), bn = spec.get("block_n"),
                bk = spec.get("block_k");
  Value a = k.ptrParam("a", DType::BF16), b = k.ptrParam("b", DType::BF16);
  Value c = k.ptrParam("c", DType::BF16);
  Value m = k.scalarParam("m", DType::I32);
  k.setConfig({{bm, bn, bk}, spec.get("warps"), spec.get("stages")});
  View av = makeView(a, {m, kDim}, {kDim, 1}), bv = makeView(b, {kDim, n}, {n, 1});
  View cv = makeView(c, {m, n}, {n, 1});
  Value row = programId(0) * bm, col = programId(1) * bn;
  auto acc = forRange(0, kDim, bk, {zeros({bm, bn}, DType::F32)},
                      [&](Value kk, std::vector<Value> carried) -> std::vector<Value> {
                        return {dot(load(av, {row, kk}, {bm, bk}),
                                    load(bv, {kk, col}, {bk, bn}), carried[0])};
                      });
  store(cv, {row, col}, acc[0].to(DType::BF16));
}

/// c[M, N] = bf16(scale * (a[M, K] x w[N, K]^T)), e4m3 operands (W8A8 GEMM).
void buildGemmE4m3(Kernel &k, const Specialization &spec) {
  const int64_t n = spec.get("n"), kDim = spec.get("k");
  const int64_t bm = spec.get("block_m"), bn = spec.get("block_n"),
                bk = spec.get("block_k");
  Value a = k.ptrParam("a", DType::F8E4M3), w = k.ptrParam("w", DType::F8E4M3);
  Value c = k.ptrParam("c", DType::BF16);
  Value m = k.scalarParam("m", DType::I32), scale = k.scalarParam("scale", DType::F32);
  Config config{{bm, bn, bk}, spec.get("warps"), spec.get("stages")};
  config.producer = spec.get("producer");
  config.persistent = spec.get("persistent");
  k.setConfig(config);
  View av = makeView(a, {m, kDim}, {kDim, 1}), wv = makeView(w, {n, kDim}, {kDim, 1});
  View cv = makeView(c, {m, n}, {n, 1});
  Value row = programId(0) * bm, col = programId(1) * bn;
  auto acc = forRange(0, kDim, bk, {zeros({bm, bn}, DType::F32)},
                      [&](Value kk, std::vector<Value> carried) -> std::vector<Value> {
                        Value wt = transpose(load(wv, {col, kk}, {bn, bk}), {1, 0});
                        return {dot(load(av, {row, kk}, {bm, bk}), wt, carried[0])};
                      });
  store(cv, {row, col}, (acc[0] * scale).to(DType::BF16));
}

/// Streams x[n] (f32 words, 16-byte loads, `steps` independent loads per
/// thread) and writes one partial sum per program: the practical read ceiling
/// a weight-streaming kernel is held against (docs/design.md#measuring-method).
void buildReadBytes(Kernel &k, const Specialization &spec) {
  const int64_t block = spec.get("block"), steps = spec.get("steps");
  Value x = k.ptrParam("x", DType::F32), out = k.ptrParam("out", DType::F32);
  Value n = k.scalarParam("n", DType::I32);
  k.setConfig({{block}, spec.get("warps"), 1, 4});
  View xv = makeView(x, {n}, {1});
  Value base = programId(0) * (block * steps);
  Value acc = zeros({block}, DType::F32);
  for (int64_t s = 0; s < steps; ++s)
    acc = acc + load(xv, {base + s * block}, {block});
  store(makeView(out, {numPrograms(0)}, {1}), {programId(0)},
        full({1}, sum(acc, 0), DType::F32));
}

/// Streams n_read f32 words of x into one partial sum per program and writes
/// the first n_write of them to y: the floor of a launch that reads and writes
/// those bytes (Timing.h). The sum keeps loads past n_write alive.
void buildStreamBytes(Kernel &k, const Specialization &spec) {
  const int64_t block = spec.get("block"), steps = spec.get("steps");
  Value x = k.ptrParam("x", DType::F32), y = k.ptrParam("y", DType::F32);
  Value out = k.ptrParam("out", DType::F32);
  Value nRead = k.scalarParam("n_read", DType::I32);
  Value nWrite = k.scalarParam("n_write", DType::I32);
  k.setConfig({{block}, spec.get("warps"), 1, 4});
  View xv = makeView(x, {nRead}, {1}), yv = makeView(y, {nWrite}, {1});
  Value base = programId(0) * (block * steps);
  Value acc = zeros({block}, DType::F32);
  for (int64_t s = 0; s < steps; ++s) {
    Value v = load(xv, {base + s * block}, {block});
    store(yv, {base + s * block}, v);
    acc = acc + v;
  }
  store(makeView(out, {numPrograms(0)}, {1}), {programId(0)},
        full({1}, sum(acc, 0), DType::F32));
}

} // namespace

llvm::Error registerExampleKernels(KernelRegistry &registry) {
  using R = ConstantRange;
  const ConstantRange block = R::powersOfTwo(1, 1 << 16), warps = R::powersOfTwo(1, 32);
  const ConstantRange size = R::between(1, 1 << 20), tile = R::powersOfTwo(1, 512);
  const ConstantRange stages = R::between(1, 8);
  const std::vector<KernelDef> defs = {
      {"vector_add",
       "out = x + y (elementwise, masked tail)",
       {{"block", 1024, "elements per program", {512, 2048, 4096}, block},
        {"warps", 4, "warps per program", {2, 8}, warps}},
       buildVectorAdd,
       {},
       {"n"}},
      {"softmax",
       "row softmax (max and sum reductions, exp)",
       {{"block", 1024, "columns per program (>= cols)", {2048}, block},
        {"warps", 4, "warps per program", {1, 2, 8, 16}, warps}},
       buildSoftmax,
       {},
       {"rows", "cols"}},
      {"cumsum",
       "inclusive cumulative sum of each row (scan)",
       {{"block", 128, "columns per program (>= cols)", {}, block},
        {"warps", 4, "warps per program", {1, 2}, warps}},
       buildCumsum,
       {},
       {"rows", "cols"}},
      {"gemm_bf16",
       "c = bf16(a x b), bf16 wgmma (sm_90a, b MN-major) or mma.sync, f32 accumulation",
       {{"n", 4096, "columns of b and c", {}, size},
        {"k", 4096, "inner dimension", {}, size},
        {"block_m", 128, "rows per program", {64, 256}, tile},
        {"block_n", 128, "columns per program", {64, 256}, tile},
        {"block_k", 32, "K per iteration", {64}, tile},
        {"warps", 4, "warps per program", {8}, warps},
        {"stages", 4, "shared-memory buffers of the K loop", {2, 3}, stages}},
       buildGemmBf16,
       {},
       {"m"}},
      // Defaults measured on the H200: 128x128x128 with 8 warps was the fastest
      // on sm_90a's wgmma, where the 4-warp tile spills
      // (docs/journal/2026-11-30-gemm.md, "GEMM (issues 3, 7): e4m3 on wgmma"),
      // and is no slower on mma.sync.
      {"gemm_e4m3",
       "c = bf16(scale * a x w^T), e4m3 wgmma (sm_90a) or mma.sync (W8A8)",
       {{"n", 4096, "rows of w, columns of c", {}, size},
        {"k", 4096, "inner dimension", {}, size},
        {"block_m", 128, "rows per program", {64, 256}, tile},
        {"block_n", 128, "columns per program", {64, 256}, tile},
        {"block_k", 128, "K per iteration", {64}, tile},
        {"warps", 8, "warps per program", {4}, warps},
        {"stages", 3, "shared-memory buffers of the K loop", {2, 4}, stages},
        {"producer",
         0,
         "an arch with TMA: the K loop's operands come by TMA; 1: issued by a "
         "producer warp(group), 2: by one consumer thread",
         {1},
         R::between(0, 2)},
        {"persistent",
         0,
         "G >= 1: one program per multiprocessor walks the tiles, G rows of tiles at "
         "a time",
         {8},
         R::between(0, 64)}},
       buildGemmE4m3,
       {},
       {"m"}},
      {"read_bytes",
       "reads n f32 words, one partial sum per program (read ceiling)",
       {{"block", 2048, "words per step", {}, block},
        {"steps", 4, "unrolled steps per program", {}, R::between(1, 64)},
        {"warps", 4, "warps per program", {}, warps}},
       buildReadBytes},
      {"stream_bytes",
       "reads n_read f32 words (one partial sum per program), writes the first n_write "
       "(a launch's floor)",
       {{"block", 2048, "words per step", {}, block},
        {"steps", 4, "unrolled steps per program", {}, R::between(1, 64)},
        {"warps", 4, "warps per program", {}, warps}},
       buildStreamBytes},
  };
  for (const KernelDef &def : defs)
    if (auto err = registry.add(def))
      return err;
  return llvm::Error::success();
}

} // namespace tilejit::models
