// Checks a step backend against the sequential f64 reference (Check.h): carried
// steps in lockstep with the reference, then every op of the last step against
// the reference fed the backend's own input to it (CheckOps.h).
#include "CheckOps.h"

#include "tilejit/support/FloatFormats.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

namespace tilejit::models {
namespace {

using namespace detail;

template <typename T> void assign(std::vector<T> &v, const std::vector<uint8_t> &b) {
  v.resize(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
}

/// The dropped SSM carry's separation: the share of the carried state that the
/// state band rejects in the twin (the reference from zero SSM pages), over
/// the heads that keep at least kMinCarryKept of their initial state. The
/// recurrence is linear in it, S_T = L S_0 + (what S_0 does not touch), so
/// want - twin = L S_0 exactly, and each (slot, head)'s L is its least-squares
/// ratio; a head that decayed its state away (L ~ 0) cannot show the defect on
/// any input, so it is left out rather than diluting the share. -1 when no
/// head keeps that much (the separation does not apply); `heads` counts those
/// that do.
double droppedCarryShare(const NemotronHConfig &c, const std::set<int64_t> &carried,
                         const std::vector<float> &initial,
                         const std::vector<float> &want, const std::vector<float> &twin,
                         const std::function<double(double)> &stateAtol, int64_t &heads) {
  const int64_t head = c.headDim * c.stateSize;
  int64_t checked = 0, outside = 0;
  double worst = 0;
  heads = 0;
  for (int64_t slot : carried)
    for (int64_t h = 0; h < c.numHeads; ++h) {
      const int64_t first = (slot * c.numHeads + h) * head;
      double cross = 0, norm = 0;
      for (int64_t i = first; i < first + head; ++i) {
        cross += (double(want[i]) - double(twin[i])) * double(initial[i]);
        norm += double(initial[i]) * double(initial[i]);
      }
      if (norm == 0 || cross / norm < StepCheck::kMinCarryKept)
        continue;
      ++heads;
      for (int64_t i = first; i < first + head; ++i)
        countInBand(twin[i], want[i], stateAtol(want[i]), StepCheck::kStateRtol, checked,
                    outside, worst);
    }
  return checked ? double(outside) / checked : -1;
}

} // namespace

bool StepCheck::ok() const {
  bool good =
      outChecked > 0 && outputsOk() && untouchedSlotsDiffering == 0 &&
      paddingNonZero == 0 && !layers.empty() && quantBad == 0 &&
      (!quantScaleShows || quantDroppedScale >= kMinDroppedInputScale * quantChecked) &&
      !projections.empty();
  for (const Layer &l : layers)
    good &= l.ssmChecked > 0 && l.convChecked > 0 && l.ssmBad == 0 && l.convBad == 0 &&
            (l.droppedCarry < 0 || l.droppedCarry >= kMinDroppedCarry);
  for (const ProjectionCheck &p : projections)
    good &= p.ok();
  for (const SsdCheck &ssd : ssds)
    good &= ssd.ok();
  for (const NormCheck &n : norms)
    good &=
        n.checked > 0 && n.outside == 0 &&
        (!n.e4m3 || !n.scaleShows || n.droppedScale >= kMinDroppedInputScale * n.checked);
  return good;
}

bool StepCheck::outputsOk() const {
  return outBad == 0 || (yardOut && outBad <= yardOutBad &&
                         outMaxError <= SsdCheck::kMaxWorstRatio * yardOutMaxError);
}

void StepCheck::print(llvm::raw_ostream &os) const {
  os << llvm::formatv(
      "  output {0,10} elements, {1} outside {2}/{3} (worst {4:f2} of the "
      "band)",
      outChecked, outBad, kOutAtol, kOutRtol, outMaxError);
  if (yardOut)
    os << llvm::formatv(
        "; R5p-m's yardstick layers (the reduced SSD's bound where any is "
        "outside): {0} outside, worst {1:f2} (needs <= {0} and <= {2:f2})",
        yardOutBad, yardOutMaxError, SsdCheck::kMaxWorstRatio * yardOutMaxError);
  os << "\n";
  for (const Layer &l : layers)
    os << llvm::formatv(
        "  layer {0,2}: ssm state {1} elements, {2} outside {3}/{4}{13} (worst "
        "{5:f2}; {6}); conv state {7} elements, {8} outside {9}/{10} (worst {11:f2}), "
        "{12} not bit-identical\n",
        l.layer, l.ssmChecked, l.ssmBad, kStateAtol, kStateRtol, l.ssmMaxError,
        l.droppedCarry < 0
            ? llvm::formatv(
                  "no carried head keeps {0:f0} % of its state: a dropped carry "
                  "cannot show",
                  100 * kMinCarryKept)
                  .str()
            : llvm::formatv("a dropped carry puts {0:f1} % of the {1} carried heads that "
                            "keep {2:f0} % outside, needs {3:f0} %",
                            100 * l.droppedCarry, l.carryHeads, 100 * kMinCarryKept,
                            100 * kMinDroppedCarry)
                  .str(),
        l.convChecked, l.convBad, kOutAtol, kOutRtol, l.convMaxError, l.convNotIdentical,
        l.pageUlps
            ? llvm::formatv(" + {0} {1} ulp", l.pageUlps, tensorTypeName(l.pageType))
                  .str()
            : std::string());
  for (const ProjectionCheck &p : projections)
    p.print(os);
  for (const SsdCheck &ssd : ssds)
    ssd.print(os);
  for (const NormCheck &n : norms) {
    os << llvm::formatv(
        "  layer {0} gated norm ({1}): {2} outputs, {3} outside R6's band{4} "
        "(worst {5:f2})",
        n.layer, n.e4m3 ? "e4m3 codes, decoded" : "bf16", n.checked, n.outside,
        n.e4m3 ? " + one e4m3 step" : "", n.worst);
    if (n.e4m3 && n.checked)
      os << llvm::formatv(
          "; a dropped input_scale puts {0:f1} % outside ({1})",
          100.0 * n.droppedScale / n.checked,
          n.scaleShows
              ? llvm::formatv("needs {0:f0} %", 100 * kMinDroppedInputScale).str()
              : std::string("not held: s_x is within an e4m3 step of 1"));
    os << "\n";
  }
  if (quantChecked)
    os << llvm::formatv(
        "  activation quant: {0} codes, {1} neither e4m3(x / s_x) nor "
        "e4m3(x * (1 / s_x)); a dropped input_scale changes {2:f1} % of them "
        "({3})\n",
        quantChecked, quantBad, 100.0 * quantDroppedScale / quantChecked,
        quantScaleShows
            ? llvm::formatv("needs {0:f0} %", 100 * kMinDroppedInputScale).str()
            : std::string("not held: s_x is within an e4m3 step of 1"));
  os << llvm::formatv("  untouched slots changed: {0}; padding outputs not zero: {1}\n",
                      untouchedSlotsDiffering, paddingNonZero);
}

namespace {

/// The lockstep of a backend and the reference through `layers`. `rows` hidden
/// rows per step (`padding` of them must come out 0), `used` the slots the
/// batch names, `carried` those whose rows continue from their state,
/// `refLayer` one layer of the reference (pages updated in place), `opChecks`
/// the per-op checks of one layer on the last step's buffers (with the
/// backend's SSM page values before that step).
struct Lockstep {
  const NemotronHConfig &c;
  const std::vector<MambaLayerWeights> &layers;
  const StepPlan &plan;
  int64_t rows;
  std::vector<bool> padding;
  std::set<int64_t> used, carried;
  std::function<llvm::Expected<Tensor<uint16_t>>(
      const MambaLayerWeights &, const Tensor<uint16_t> &, ref::PagedState &)>
      refLayer;
  /// Set where the plan's SSD runs a reduced precision (R5p-m): the layer as
  /// R5p-m's yardstick computes it, whose outputs bound the backend's.
  std::function<llvm::Expected<Tensor<uint16_t>>(
      const MambaLayerWeights &, const Tensor<uint16_t> &, ref::PagedState &)>
      yardLayer;
  std::function<void(size_t layer, const HostBuffers &,
                     const std::vector<float> &ssmBefore, StepCheck &)>
      opChecks;

  llvm::Expected<StepCheck> run(HostBuffers buffers, int steps, uint64_t seed,
                                const StepFn &runStep) const;
  /// The backend's SSM page values of every layer.
  std::vector<std::vector<float>> ssmPages(const HostBuffers &buffers,
                                           DType pageType) const {
    std::vector<std::vector<float>> pages;
    for (const MambaLayerWeights &w : layers)
      pages.push_back(
          pageValues(buffers.at(StepPlan::layerBuffer(w.layer, "ssm_page")), pageType));
    return pages;
  }
  /// The outputs of layer `w` with R5p-m's yardstick SSD, from the pages
  /// before the step (none: not counted), against the f64 reference's `want`.
  llvm::Error countYardstick(const MambaLayerWeights &w, const Tensor<uint16_t> &in,
                             std::optional<ref::PagedState> &pages,
                             const Tensor<uint16_t> &want, StepCheck &check) const {
    if (!pages)
      return llvm::Error::success();
    auto yard = yardLayer(w, in, *pages);
    if (!yard)
      return yard.takeError();
    check.yardOut = true;
    for (size_t i = 0; i < yard->data.size(); ++i)
      countInBand(bf16ToF32(yard->data[i]), bf16ToF32(want.data[i]), StepCheck::kOutAtol,
                  StepCheck::kOutRtol, check.yardOutChecked, check.yardOutBad,
                  check.yardOutMaxError);
    return llvm::Error::success();
  }
  /// The reference's SSM pages set to the backend's (stochastic rounding).
  void takePages(const HostBuffers &buffers, DType pageType, StepCheck &check) const {
    std::vector<std::vector<float>> pages = ssmPages(buffers, pageType);
    for (size_t l = 0; l < layers.size(); ++l)
      check.want[l].ssm.data = std::move(pages[l]);
  }
};

llvm::Expected<StepCheck> Lockstep::run(HostBuffers buffers, int steps, uint64_t seed,
                                        const StepFn &runStep) const {
  const int64_t numSlots = plan.numSlots;
  // R8s: a 16-bit page holds the state rounded once per step, and the
  // reference rounds its state to the page's type at the same point (nearest
  // even); the band grows by one page ulp per step.
  const DType pageType =
      plan.buffers.at(StepPlan::layerBuffer(layers.front().layer, "ssm_page")).type;
  // Stochastic rounding may round either way by up to one page ulp, so its
  // page departs from the reference's nearest-even one by a random walk that
  // moves the next steps' outputs past their band. As it does with each
  // layer's input, the reference then continues every step from the
  // backend's own page: the page band is one ulp, and the dropped-carry twin
  // still separates.
  const bool stochastic = plan.buffers.count(kSsmSeedBuffer) != 0;
  const int roundings = stochastic ? 1 : steps;
  auto stateAtol = [&](double want) {
    return StepCheck::kStateAtol + roundings * pageUlp(want, pageType);
  };
  Rng rng(seed);
  StepCheck check;
  // The twin: the reference from zero SSM pages, fed the same inputs: what a
  // backend that drops the SSM carry computes, which the state band rejects.
  std::vector<ref::PagedState> twin;
  for (const MambaLayerWeights &w : layers) {
    ref::PagedState pages = ref::PagedState::zeros(c, numSlots);
    pages.conv = randomBF16(pages.conv.shape, rng, -1, 1);
    twin.push_back(pages);
    pages.ssm = randomF32(pages.ssm.shape, rng, -1, 1);
    roundToPage(pages.ssm.data, pageType);
    buffers[StepPlan::layerBuffer(w.layer, "conv_page")] = bytesOf(pages.conv.data);
    buffers[StepPlan::layerBuffer(w.layer, "ssm_page")] =
        pageBytes(pages.ssm.data, pageType);
    check.want.push_back(pages);
  }
  check.initial = check.want;
  const std::vector<ref::PagedState> &initial = check.initial;
  Tensor<uint16_t> hidden;
  for (int s = 0; s < steps; ++s) {
    hidden = randomBF16({rows, c.hiddenSize}, rng, -2, 2);
    buffers[StepPlan::activation(0)] = bytesOf(hidden.data);
    for (auto &[name, bytes] : buffers) // poison what the step must write
      if (plan.buffers.at(name).role == PlanBuffer::Role::Activation)
        std::fill(bytes.begin(), bytes.end(), 0xff);
    if (stochastic)
      takePages(buffers, pageType, check);
    const std::vector<std::vector<float>> ssmBefore = ssmPages(buffers, pageType);
    if (auto err = runStep(buffers))
      return std::move(err);
    // Each layer is held against the reference fed the backend's own input to
    // it: through the reference's own outputs, a one-ulp difference R1 allows
    // moves an e4m3 code in the next FP8 layer (outputs outside on the H200).
    Tensor<uint16_t> in = hidden;
    for (size_t l = 0; l < layers.size(); ++l) {
      if (l > 0)
        assign(in.data, buffers[StepPlan::activation(l)]);
      auto before =
          yardLayer && s + 1 == steps ? std::optional(check.want[l]) : std::nullopt;
      auto want = refLayer(layers[l], in, check.want[l]);
      if (!want)
        return want.takeError();
      if (auto err = countYardstick(layers[l], in, before, *want, check))
        return std::move(err);
      if (auto zeroed = refLayer(layers[l], in, twin[l]); !zeroed)
        return zeroed.takeError();
      roundToPage(check.want[l].ssm.data, pageType);
      roundToPage(twin[l].ssm.data, pageType);
      if (s + 1 < steps)
        continue;
      std::vector<uint16_t> got;
      assign(got, buffers[StepPlan::activation(l + 1)]);
      for (size_t i = 0; i < got.size(); ++i) {
        countInBand(bf16ToF32(got[i]), bf16ToF32(want->data[i]), StepCheck::kOutAtol,
                    StepCheck::kOutRtol, check.outChecked, check.outBad,
                    check.outMaxError);
        if (padding[i / c.hiddenSize] && got[i] != 0)
          ++check.paddingNonZero;
      }
      opChecks(l, buffers, ssmBefore[l], check);
      check.gotOut = std::move(got);
      check.wantOut = want->data;
    }
  }
  for (size_t l = 0; l < layers.size(); ++l) {
    ref::PagedState got = check.want[l];
    assign(got.conv.data, buffers[StepPlan::layerBuffer(layers[l].layer, "conv_page")]);
    got.ssm.data =
        pageValues(buffers[StepPlan::layerBuffer(layers[l].layer, "ssm_page")], pageType);
    StepCheck::Layer stats;
    stats.layer = layers[l].layer;
    stats.pageType = pageType;
    stats.pageUlps = pageType == DType::F32 ? 0 : roundings;
    for (size_t i = 0; i < got.ssm.data.size(); ++i)
      countInBand(got.ssm.data[i], check.want[l].ssm.data[i],
                  stateAtol(check.want[l].ssm.data[i]), StepCheck::kStateRtol,
                  stats.ssmChecked, stats.ssmBad, stats.ssmMaxError);
    for (size_t i = 0; i < got.conv.data.size(); ++i) {
      countInBand(bf16ToF32(got.conv.data[i]), bf16ToF32(check.want[l].conv.data[i]),
                  StepCheck::kOutAtol, StepCheck::kOutRtol, stats.convChecked,
                  stats.convBad, stats.convMaxError);
      stats.convNotIdentical += got.conv.data[i] != check.want[l].conv.data[i];
    }
    stats.droppedCarry =
        droppedCarryShare(c, carried, initial[l].ssm.data, check.want[l].ssm.data,
                          twin[l].ssm.data, stateAtol, stats.carryHeads);
    check.layers.push_back(stats);
    for (int64_t slot = 0; slot < numSlots; ++slot) {
      if (used.count(slot))
        continue;
      auto same = [&](const auto &a, const auto &b) {
        auto ra = sliceRows(a, slot, slot + 1), rb = sliceRows(b, slot, slot + 1);
        return std::memcmp(ra.data.data(), rb.data.data(),
                           ra.data.size() * sizeof(ra.data[0])) == 0;
      };
      if (!same(got.conv, initial[l].conv) || !same(got.ssm, initial[l].ssm))
        ++check.untouchedSlotsDiffering;
    }
    check.got.push_back(std::move(got));
  }
  return check;
}

/// Checks that the plan keeps every checked layer's intermediates apart.
llvm::Error expectPerLayerActivations(const StepPlan &plan,
                                      const std::vector<MambaLayerWeights> &layers) {
  for (const MambaLayerWeights &w : layers)
    if (!plan.buffers.count(StepPlan::layerBuffer(w.layer, "y")))
      return llvm::createStringError(
          llvm::formatv("check: the plan has no buffer 'l{0}.y': checks need a plan made "
                        "with per-layer "
                        "activations (PlanOptions::perLayerActivations)",
                        w.layer));
  return llvm::Error::success();
}

} // namespace

llvm::Expected<StepCheck> checkDecodeSteps(const NemotronHConfig &c,
                                           const std::vector<MambaLayerWeights> &layers,
                                           const StepPlan &plan, const LaunchSums &sums,
                                           llvm::ArrayRef<int32_t> slots, int steps,
                                           uint64_t seed, const StepFn &runStep) {
  if (auto err = expectPerLayerActivations(plan, layers))
    return std::move(err);
  HostBuffers buffers = allocateHostBuffers(plan);
  buffers["slots"] = bytesOf(std::vector<int32_t>(slots.begin(), slots.end()));
  std::vector<int64_t> slots64(slots.begin(), slots.end());
  const int64_t rows = int64_t(slots.size());
  const int64_t I = c.intermediate();
  Lockstep lockstep{c, layers, plan, rows};
  for (int32_t s : slots) {
    lockstep.padding.push_back(s < 0);
    if (s >= 0)
      lockstep.used.insert(s), lockstep.carried.insert(s);
  }
  lockstep.refLayer = [&](const MambaLayerWeights &w, const Tensor<uint16_t> &hidden,
                          ref::PagedState &pages) {
    return ref::mixerDecode(c, w, hidden, slots64, pages);
  };
  lockstep.opChecks = [&](size_t l, const HostBuffers &b, const std::vector<float> &,
                          StepCheck &check) {
    const MambaLayerWeights &w = layers[l];
    const std::vector<bool> &skip = lockstep.padding;
    Tensor<uint16_t> x =
        tensorOf<uint16_t>(b.at(StepPlan::activation(l)), {rows, c.hiddenSize});
    Tensor<uint16_t> z =
        b.count(StepPlan::layerBuffer(w.layer, "zxbcdt"))
            ? sliceColumns(checkInProjGemm(c, w, plan, sums, b, x, check), 0, I)
            : checkFusedInProj(c, w, plan, sums, b, x, skip, check);
    Tensor<uint16_t> y = tensorOf<uint16_t>(layerIntermediate(b, w, "y"), {rows, I});
    const std::vector<uint8_t> &normed = layerIntermediate(b, w, "normed");
    Tensor<uint16_t> reference = checkNorm(c, w, y, z, normed, skip, check);
    checkOutProj(c, w, plan, sums, normed, std::move(reference),
                 b.at(StepPlan::activation(l + 1)), skip, check);
  };
  return lockstep.run(std::move(buffers), steps, seed, runStep);
}

llvm::Expected<StepCheck> checkPrefillSteps(const NemotronHConfig &c,
                                            const std::vector<MambaLayerWeights> &layers,
                                            const PrefillPlan &prefill,
                                            const LaunchSums &sums,
                                            const ref::PrefillBatch &batch, int steps,
                                            uint64_t seed, const StepFn &runStep) {
  const StepPlan &plan = prefill.plan;
  if (auto err = expectPerLayerActivations(plan, layers))
    return std::move(err);
  HostBuffers buffers = allocateHostBuffers(plan);
  prefill.writeInputs(buffers);
  const int64_t tokens = prefill.tokens, I = c.intermediate();
  Lockstep lockstep{c, layers, plan, tokens};
  lockstep.padding.assign(tokens, false);
  for (size_t s = 0; s < batch.slots.size(); ++s) {
    for (int64_t t = batch.cuSeqlens[s]; t < batch.cuSeqlens[s + 1]; ++t)
      lockstep.padding[t] = batch.slots[s] < 0;
    lockstep.used.insert(batch.slots[s]);
    if (batch.slots[s] >= 0 && batch.continueFromSlot[s])
      lockstep.carried.insert(batch.slots[s]);
  }
  lockstep.refLayer = [&](const MambaLayerWeights &w, const Tensor<uint16_t> &hidden,
                          ref::PagedState &pages) {
    return ref::mixerPrefill(c, w, hidden, batch, pages);
  };
  if (prefill.ssdPrecision != SsdPrecision::Exact)
    lockstep.yardLayer = [&](const MambaLayerWeights &w, const Tensor<uint16_t> &hidden,
                             ref::PagedState &pages) {
      return ref::mixerPrefill(c, w, hidden, batch, pages, prefill.chunk);
    };
  if (prefill.ssdPrecision != SsdPrecision::Exact)
    lockstep.yardLayer = [&](const MambaLayerWeights &w, const Tensor<uint16_t> &hidden,
                             ref::PagedState &pages) {
      return ref::mixerPrefill(c, w, hidden, batch, pages, prefill.chunk);
    };
  lockstep.opChecks = [&](size_t l, const HostBuffers &b,
                          const std::vector<float> &ssmBefore, StepCheck &check) {
    const MambaLayerWeights &w = layers[l];
    Tensor<uint16_t> x =
        tensorOf<uint16_t>(b.at(StepPlan::activation(l)), {tokens, c.hiddenSize});
    Tensor<uint16_t> zxbcdt = checkInProjGemm(c, w, plan, sums, b, x, check);
    checkSsd(c, w, batch, prefill.chunk, prefill.ssdPrecision, b, ssmBefore, check);
    Tensor<uint16_t> y = tensorOf<uint16_t>(layerIntermediate(b, w, "y"), {tokens, I});
    Tensor<uint16_t> z = sliceColumns(zxbcdt, 0, I);
    const std::vector<uint8_t> &normed = layerIntermediate(b, w, "normed");
    Tensor<uint16_t> reference = checkNorm(c, w, y, z, normed, lockstep.padding, check);
    checkOutProj(c, w, plan, sums, normed, std::move(reference),
                 b.at(StepPlan::activation(l + 1)), lockstep.padding, check);
  };
  return lockstep.run(std::move(buffers), steps, seed, runStep);
}

} // namespace tilejit::models
