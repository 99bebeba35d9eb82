// The per-op checks of one NemotronH layer after a checked step (CheckOps.cpp):
// each op of the backend held against the f64 reference fed the backend's own
// input to it, its result counted into a StepCheck (Check.h).
#ifndef TILEJIT_MODELS_NEMOTRON_H_CHECKOPS_H
#define TILEJIT_MODELS_NEMOTRON_H_CHECKOPS_H

#include "tilejit/models/nemotron_h/Check.h"

#include <cstring>

namespace tilejit::models::detail {

/// `bytes` as a tensor of `shape`.
template <typename T>
Tensor<T> tensorOf(const std::vector<uint8_t> &bytes, std::vector<int64_t> shape) {
  Tensor<T> t(std::move(shape));
  std::memcpy(t.data.data(), bytes.data(), t.data.size() * sizeof(T));
  return t;
}

/// The backend's buffer `name` of layer `w` ("l<layer>.<name>"), which a plan
/// with per-layer activations has.
const std::vector<uint8_t> &layerIntermediate(const HostBuffers &buffers,
                                              const MambaLayerWeights &w,
                                              llvm::StringRef name);

/// R6 fed the backend's y and z, against the backend's `normed` (bf16, or
/// e4m3 codes at the out_proj input scale), rows in `skip` left out; returns
/// the reference norm's bf16 output (the out_proj check's unquantized input).
Tensor<uint16_t> checkNorm(const NemotronHConfig &c, const MambaLayerWeights &w,
                           const Tensor<uint16_t> &y, const Tensor<uint16_t> &z,
                           const std::vector<uint8_t> &normed,
                           const std::vector<bool> &skip, StepCheck &check);

/// out_proj of layer `w` against the f64 linear of the backend's normed
/// (`unquantized`: the reference norm's output, for the dropped-scale share).
void checkOutProj(const NemotronHConfig &c, const MambaLayerWeights &w,
                  const StepPlan &plan, const LaunchSums &sums,
                  const std::vector<uint8_t> &normed, Tensor<uint16_t> unquantized,
                  const std::vector<uint8_t> &out, const std::vector<bool> &skip,
                  StepCheck &check);

/// in_proj as a GEMM of `x` into zxbcdt (prefill, and decode from its GEMM
/// rows on): the quant's codes when FP8, then the GEMM over every row (padding
/// rows too: the GEMM does not know them) from the codes it read. Returns
/// the backend's zxbcdt.
Tensor<uint16_t> checkInProjGemm(const NemotronHConfig &c, const MambaLayerWeights &w,
                                 const StepPlan &plan, const LaunchSums &sums,
                                 const HostBuffers &b, const Tensor<uint16_t> &x,
                                 StepCheck &check);

/// Decode's fused in_proj of `x`: its z and dt columns, which leave the kernel
/// as they are (xBC goes through the conv first), rows in `skip` left out.
/// Returns the backend's z.
Tensor<uint16_t> checkFusedInProj(const NemotronHConfig &c, const MambaLayerWeights &w,
                                  const StepPlan &plan, const LaunchSums &sums,
                                  const HostBuffers &b, const Tensor<uint16_t> &x,
                                  const std::vector<bool> &skip, StepCheck &check);

/// The prefill SSD of layer `w` (SsdCheck): the backend's y against the f64
/// R5 of its own xBC and dt per sequence of `batch`, each continued sequence
/// from its slot of `ssmBefore` (the backend's pages before the step), and in
/// a reduced `precision` against R5p-m's yardstick at chunk `chunk` too.
void checkSsd(const NemotronHConfig &c, const MambaLayerWeights &w,
              const ref::PrefillBatch &batch, int64_t chunk, SsdPrecision precision,
              const HostBuffers &b, const std::vector<float> &ssmBefore,
              StepCheck &check);

/// R8s: an SSM page of element type `type` (f32, bf16 or f16) as the
/// reference holds it. pageBytes rounds to nearest even; pageValues widens.
std::vector<uint8_t> pageBytes(const std::vector<float> &state, DType type);
std::vector<float> pageValues(const std::vector<uint8_t> &bytes, DType type);
/// The reference's state rounded where a step rounds it into the page.
void roundToPage(std::vector<float> &state, DType type);
/// One unit in the last place of `type` at |x|: what R8s allows a 16-bit
/// page per step beyond R5d's band (0 for f32, whose band is R5d's alone).
double pageUlp(double x, DType type);

} // namespace tilejit::models::detail

#endif // TILEJIT_MODELS_NEMOTRON_H_CHECKOPS_H
