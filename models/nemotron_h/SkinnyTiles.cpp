// The decode plan's skinny projections (docs/decode-projections.md, "The
// skinny form"): when a projection takes it, its tiles, and the e4m3 input
// quant that lets the FP8 in_proj's operands both stream through shared memory.
#include "LayerBuilder.h"

namespace tilejit::models::detail {

bool skinnyProjection(const KernelOverrides &overrides, llvm::StringRef kernel,
                      int64_t rows) {
  if (auto it = overrides.find(kernel.str()); it != overrides.end()) {
    if (auto skinny = it->second.find("skinny"); skinny != it->second.end())
      return skinny->second != 0;
    // A form the caller names keeps its own tiles.
    for (const char *form : {"direct", "chunked"})
      if (it->second.count(form))
        return false;
  }
  // Measured on the H100 (docs/BENCHMARKS.md, "The skinny projections"): ahead
  // of the direct form and of the split GEMM from 2 to 16 rows, level with the
  // GEMM at 32; from 64 rows its in_proj tiles spill, and the GEMM takes over.
  return rows >= 2 && rows < 64;
}

/// 64 weight rows a program on one warpgroup are wgmma's m64n8 tiles
/// (out_proj: 42 column tiles, which the plan splits in K); in_proj_conv
/// takes 32 rows on 2 warps, 322 programs: no split (its conv epilogue is
/// fused), and about 2.4 programs per multiprocessor of the H100 and H200, all
/// resident at once. Four stages keep three K steps of the weight in flight
/// per program (24 KB at 32 rows, 48 KB at 64).
ConstantValues skinnyTiles(llvm::StringRef kernel, int64_t rows, bool fp8) {
  int64_t bm = 8;
  while (bm < rows && bm < 64)
    bm *= 2;
  const bool in = kernel == "in_proj_conv";
  ConstantValues tiles = {{"skinny", 1},
                          {"block_m", bm},
                          {"block_n", in ? 32 : 64},
                          {"block_k", fp8 ? 256 : 128},
                          {"warps", in ? 2 : 4},
                          {"stages", 4}};
  if (in && fp8)
    tiles["quantized_input"] = 1;
  return tiles;
}

llvm::Expected<PlanArg> LayerBuilder::quantizedInput(const MambaLayerWeights &w,
                                                     const PlanArg &in, int64_t width) {
  auto quant = kernel("quantize_e4m3", {{"width", width}});
  if (!quant)
    return quant.takeError();
  PlanArg quantized = intermediate(w.layer, "act_q", DType::F8E4M3, {rows, width});
  // The flat form tiles the rows as one stream.
  const int64_t block = quant->get("block");
  launch(w, "quant", "quantize_e4m3", *quant,
         quant->get("flat")
             ? std::array<int64_t, 3>{llvm::divideCeilSigned(rows * width, block), 1, 1}
             : std::array<int64_t, 3>{llvm::divideCeilSigned(width, block), rows, 1},
         {in, quantized, PlanArg::integer(rows), PlanArg::real(w.inProj.inputScale)},
         rows * width * 2, rows * width);
  return quantized;
}

} // namespace tilejit::models::detail
