// R7: the Mamba2 mixer, decode (R3d + R5d) and packed prefill (R3 + R5), on the
// paged state of R8. Every operand is checked before any slot is written.
#include "Checks.h"
#include "tilejit/models/reference/Reference.h"

namespace tilejit::models::ref {
namespace {

const char *const kOp = "mixer";

llvm::Error checkProjection(llvm::StringRef name, const Projection &projection,
                            llvm::ArrayRef<int64_t> want) {
  return projection.isFP8 ? detail::expectShape(kOp, name, projection.fp8Weight, want)
                          : detail::expectShape(kOp, name, projection.bf16Weight, want);
}

/// Checks hidden, the layer's weights and the pages against `config`.
llvm::Error checkOperands(const NemotronHConfig &c, const MambaLayerWeights &w,
                          const Tensor<uint16_t> &hidden, const PagedState &state) {
  const int64_t I = c.intermediate(), Cd = c.convChannels(), H = c.numHeads;
  if (auto err = detail::expectRank(kOp, "hidden", hidden, 2))
    return err;
  if (auto err =
          detail::expectShape(kOp, "hidden", hidden, {hidden.dim(0), c.hiddenSize}))
    return err;
  if (auto err = checkProjection("in_proj", w.inProj, {c.inProjRows(), c.hiddenSize}))
    return err;
  if (auto err = checkProjection("out_proj", w.outProj, {c.hiddenSize, I}))
    return err;
  if (auto err =
          detail::expectShape(kOp, "conv1d.weight", w.convWeight, {Cd, c.convKernel}))
    return err;
  if (auto err = detail::expectShape(kOp, "conv1d.bias", w.convBias, {Cd}))
    return err;
  for (auto [name, param] :
       {std::pair{"A_log", &w.aLog}, {"dt_bias", &w.dtBias}, {"D", &w.d}})
    if (auto err = detail::expectShape(kOp, name, *param, {H}))
      return err;
  if (auto err = detail::expectShape(kOp, "norm.weight", w.normWeight, {I}))
    return err;
  const int64_t slots = state.numSlots();
  if (auto err = detail::expectShape(kOp, "conv page", state.conv,
                                     {slots, Cd, c.convKernel - 1}))
    return err;
  return detail::expectShape(kOp, "ssm page", state.ssm,
                             {slots, H, c.headDim, c.stateSize});
}

/// The R2 splits of the bf16 in_proj output.
struct Splits {
  Tensor<uint16_t> z, xBC, dt;
};

Splits projectAndSplit(const NemotronHConfig &c, const MambaLayerWeights &w,
                       const Tensor<uint16_t> &hidden) {
  Tensor<uint16_t> zxbcdt = toBF16(cantFail(linear(hidden, w.inProj)));
  const int64_t I = c.intermediate(), Cd = c.convChannels();
  return {sliceColumns(zxbcdt, 0, I), sliceColumns(zxbcdt, I, I + Cd),
          sliceColumns(zxbcdt, I + Cd, I + Cd + c.numHeads)};
}

/// x [L, H, P], B and C [L, G, N]: the R2 views of the bf16 conv output.
struct ConvSplits {
  Tensor<uint16_t> x, B, C;
};

ConvSplits splitConvOutput(const NemotronHConfig &c, const Tensor<uint16_t> &convOut) {
  const int64_t L = convOut.dim(0), I = c.intermediate(), GN = c.numGroups * c.stateSize;
  return {
      sliceColumns(convOut, 0, I).reshaped({L, c.numHeads, c.headDim}),
      sliceColumns(convOut, I, I + GN).reshaped({L, c.numGroups, c.stateSize}),
      sliceColumns(convOut, I + GN, I + 2 * GN).reshaped({L, c.numGroups, c.stateSize})};
}

/// R6 then out_proj on y [T, I] bf16; rows in `paddingRows` are zeroed.
Tensor<uint16_t> normAndProject(const NemotronHConfig &c, const MambaLayerWeights &w,
                                const Tensor<uint16_t> &y, const Tensor<uint16_t> &z,
                                llvm::ArrayRef<int64_t> paddingRows) {
  Tensor<uint16_t> normed =
      toBF16(cantFail(gatedRmsNorm(y, z, w.normWeight, c.normGroupSize(), c.eps)));
  Tensor<uint16_t> out = toBF16(cantFail(linear(normed, w.outProj)));
  for (int64_t row : paddingRows)
    assignRows(out, row, Tensor<uint16_t>({1, c.hiddenSize}));
  return out;
}

} // namespace

llvm::Expected<Tensor<uint16_t>> mixerDecode(const NemotronHConfig &config,
                                             const MambaLayerWeights &weights,
                                             const Tensor<uint16_t> &hidden,
                                             llvm::ArrayRef<int64_t> slots,
                                             PagedState &state) {
  if (auto err = checkOperands(config, weights, hidden, state))
    return std::move(err);
  if (int64_t(slots.size()) != hidden.dim(0))
    return llvm::createStringError("mixer: %zu slot indices for %lld rows", slots.size(),
                                   (long long)hidden.dim(0));
  if (auto err = checkSlots(slots, state.numSlots()))
    return std::move(err);

  const int64_t rows = hidden.dim(0);
  Splits split = projectAndSplit(config, weights, hidden);
  Tensor<uint16_t> convOut = toBF16(cantFail(convUpdatePaged(
      split.xBC, weights.convWeight, weights.convBias, slots, state.conv)));
  ConvSplits xbc = splitConvOutput(config, convOut);
  Tensor<uint16_t> y = toBF16(cantFail(ssmUpdatePaged(
      xbc.x, split.dt, xbc.B, xbc.C, SsmParams::of(config, weights), slots, state.ssm)));
  std::vector<int64_t> padding;
  for (int64_t r = 0; r < rows; ++r)
    if (slots[r] < 0)
      padding.push_back(r);
  return normAndProject(config, weights, y.reshaped({rows, config.intermediate()}),
                        split.z, padding);
}

llvm::Expected<Tensor<uint16_t>> mixerPrefill(const NemotronHConfig &config,
                                              const MambaLayerWeights &weights,
                                              const Tensor<uint16_t> &hidden,
                                              const PrefillBatch &batch,
                                              PagedState &state, int64_t yardstickChunk) {
  if (auto err = checkOperands(config, weights, hidden, state))
    return std::move(err);
  if (auto chunks = varlenChunks(batch.cuSeqlens, hidden.dim(0), config.chunkSize);
      !chunks)
    return chunks.takeError();
  const size_t sequences = batch.cuSeqlens.size() - 1;
  if (batch.slots.size() != sequences || batch.continueFromSlot.size() != sequences)
    return llvm::createStringError(
        "mixer: %zu sequences but %zu slots and %zu continue flags", sequences,
        batch.slots.size(), batch.continueFromSlot.size());
  if (auto err = checkSlots(batch.slots, state.numSlots(), "sequence"))
    return std::move(err);

  const int64_t I = config.intermediate(), Cd = config.convChannels();
  const int64_t past = config.convKernel - 1;
  const int64_t statePage = config.numHeads * config.headDim * config.stateSize;
  const SsmParams params = SsmParams::of(config, weights);
  Splits split = projectAndSplit(config, weights, hidden);
  Tensor<uint16_t> y({hidden.dim(0), I});
  std::vector<int64_t> padding;
  // Final states are written back only after every sequence has run.
  std::vector<std::pair<int64_t, ConvPrefillResult>> convStates;
  std::vector<std::pair<int64_t, Tensor<double>>> ssmStates;
  for (size_t s = 0; s < sequences; ++s) {
    const int64_t begin = batch.cuSeqlens[s], end = batch.cuSeqlens[s + 1];
    const int64_t slot = batch.slots[s];
    if (slot < 0) {
      for (int64_t r = begin; r < end; ++r)
        padding.push_back(r);
      continue;
    }
    const bool carry = batch.continueFromSlot[s];
    Tensor<uint16_t> convInit =
        sliceRows(state.conv, slot, slot + 1).reshaped({Cd, past});
    ConvPrefillResult conv =
        cantFail(convPrefill(sliceRows(split.xBC, begin, end), weights.convWeight,
                             weights.convBias, carry ? &convInit : nullptr));
    ConvSplits xbc = splitConvOutput(config, toBF16(conv.out));
    Tensor<float> ssmInit =
        sliceRows(state.ssm, slot, slot + 1)
            .reshaped({config.numHeads, config.headDim, config.stateSize});
    const Tensor<uint16_t> dt = sliceRows(split.dt, begin, end);
    const Tensor<float> *from = carry ? &ssmInit : nullptr;
    SsmScanResult scan = yardstickChunk > 0
                             ? cantFail(ssdYardstick(xbc.x, dt, xbc.B, xbc.C, params,
                                                     from, yardstickChunk))
                             : cantFail(ssmScan(xbc.x, dt, xbc.B, xbc.C, params, from));
    assignRows(y, begin, toBF16(scan.y).reshaped({end - begin, I}));
    convStates.emplace_back(slot, std::move(conv));
    ssmStates.emplace_back(slot, std::move(scan.state));
  }
  for (auto &[slot, conv] : convStates)
    assignRows(state.conv, slot, conv.state);
  for (auto &[slot, finalState] : ssmStates)
    for (int64_t i = 0; i < statePage; ++i) // the f32 store of the final state
      state.ssm.data[slot * statePage + i] = float(finalState.data[i]);
  return normAndProject(config, weights, y, split.z, padding);
}

} // namespace tilejit::models::ref
