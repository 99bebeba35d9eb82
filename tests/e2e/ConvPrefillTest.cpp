// conv_prefill (docs/numerics.md#r3-causal-conv-prefill over a packed varlen batch, R8
// paged conv state, R9 chunk metadata) on the interpreter against the sequential f64
// reference run one sequence at a time. Outputs are poisoned first; every output element
// and every page element is examined (counts asserted); each band is paired with the
// counterfactual it separates.
#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/models/nemotron_h/PrefillMetadata.h"
#include "tilejit/support/FloatFormats.h"

#include "mlir/IR/MLIRContext.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

constexpr uint16_t kPoisonBF16 = 0x7fc1; // a NaN
// The output band: the kernel sums bias + 4 exact bf16 products in f32 (four
// roundings of partial sums below |bias| + 4 |w| |u| <= 0.5 + 4 * 1 * 2 = 8.5,
// each <= 2^-21), then silu (slope <= 1.1; the interpreter's exp and rsqrt are
// within 0.5 ulp) and one bf16 rounding; the oracle sums in f64 and rounds
// once. So |got - bf16(want)| <= 1 bf16 ulp (2^-7 |want|) + 4 * 2^-21 * 1.1
// (2.1e-6, under the 5e-6 atol). The operands below keep to those ranges.
constexpr double kAtol = 5e-6, kRtol = 0x1p-7;

/// The registered kernel `name` specialized by `constants`, compiled for the
/// interpreter.
interp::CompiledKernel compileKernel(llvm::StringRef name, const Specialization &spec) {
  const KernelDef *def = modelRegistry().find(name);
  REQUIRE(def);
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  auto module = def->build(ctx, spec);
  INFO((module ? "" : llvm::toString(module.takeError())));
  REQUIRE(bool(module));
  auto compiled =
      interp::CompiledKernel::compile(*(*module)->getOps<tile::KernelOp>().begin());
  REQUIRE(bool(compiled));
  return std::move(*compiled);
}

Specialization specialize(llvm::StringRef name, const ConstantValues &constants) {
  const KernelDef *def = modelRegistry().find(name);
  REQUIRE(def);
  return llvm::cantFail(def->specialize(constants));
}

/// conv_prefill built once for `constants` and compiled for the interpreter.
struct ConvPrefillKernel {
  explicit ConvPrefillKernel(const ConstantValues &constants) {
    Specialization spec = specialize("conv_prefill", constants);
    inner = spec.get("inner");
    channels = spec.get("channels");
    heads = spec.get("heads");
    blockT = spec.get("block_t");
    blockC = spec.get("block_c");
    splits = spec.get("splits");
    kernel.emplace(compileKernel("conv_prefill", spec));
  }

  int64_t rowStride() const { return inner + channels + heads; }

  /// Runs over `meta`'s batch: zxbcdt [T, rowStride], page [slots, channels, 3]
  /// updated in place, out [T, channels].
  void run(const PrefillMetadata &meta, const Tensor<uint16_t> &zxbcdt,
           const Tensor<uint16_t> &weight, const Tensor<uint16_t> &bias,
           Tensor<uint16_t> &page, std::vector<uint16_t> &out) const {
    using interp::Arg;
    const interp::Grid grid = {(channels + blockC - 1) / blockC, meta.numChunks(),
                               splits};
    llvm::Error err = kernel->run(
        grid, {Arg::readOnlyBuffer(zxbcdt.data), Arg::readOnlyBuffer(weight.data),
               Arg::readOnlyBuffer(bias.data), Arg::readOnlyBuffer(meta.cuSeqlens),
               Arg::readOnlyBuffer(meta.slots), Arg::readOnlyBuffer(meta.init),
               Arg::readOnlyBuffer(meta.chunkSequence),
               Arg::readOnlyBuffer(meta.chunkBegin), Arg::readOnlyBuffer(meta.chunkEnd),
               Arg::buffer(page.data), Arg::buffer(out), Arg::intScalar(page.dim(0))});
    INFO(llvm::toString(std::move(err)));
    REQUIRE(!err);
  }

  int64_t inner = 0, channels = 0, heads = 0, blockT = 0, blockC = 0, splits = 1;
  std::optional<interp::CompiledKernel> kernel;
};

/// What the f64 reference says a batch does: silu(pre) per token (0 for the
/// padding sequences' tokens) and the pages afterwards.
struct Want {
  Tensor<double> out;    ///< [T, C]
  Tensor<uint16_t> page; ///< [slots, C, 3]
};

/// R3 per sequence on xBC [T, C] (a copy of zxbcdt's xBC columns, made only
/// here, for the oracle), with each live sequence's final state written to
/// its slot. `dropInitialStates` is the counterfactual of a kernel that never
/// reads the page.
Want reference(const ref::PrefillBatch &batch, const Tensor<uint16_t> &xBC,
               const Tensor<uint16_t> &weight, const Tensor<uint16_t> &bias,
               const Tensor<uint16_t> &page, bool dropInitialStates = false) {
  const int64_t C = xBC.dim(1);
  Want want{Tensor<double>({xBC.dim(0), C}), page};
  for (size_t s = 0; s + 1 < batch.cuSeqlens.size(); ++s) {
    const int64_t begin = batch.cuSeqlens[s], end = batch.cuSeqlens[s + 1];
    const int64_t slot = batch.slots[s];
    if (slot < 0)
      continue;
    Tensor<uint16_t> initial = sliceRows(page, slot, slot + 1).reshaped({C, 3});
    bool carry = batch.continueFromSlot[s] && !dropInitialStates;
    auto result = ref::convPrefill(sliceRows(xBC, begin, end), weight, bias,
                                   carry ? &initial : nullptr);
    REQUIRE(bool(result));
    assignRows(want.out, begin, result->out);
    assignRows(want.page, slot, result->state);
  }
  return want;
}

double rounded(double v) { return ref::bf16Value(ref::bf16Bits(v)); }

bool inBand(double got, double want) {
  return std::abs(got - want) <= kAtol + kRtol * std::abs(want);
}

/// The output against the reference: live sequences' tokens in the band,
/// padding sequences' tokens exactly +0.
struct OutCheck {
  int64_t checked = 0, bad = 0, paddingChecked = 0, paddingNonZero = 0;
};

OutCheck checkOut(const ref::PrefillBatch &batch, const std::vector<uint16_t> &got,
                  const Tensor<double> &want) {
  OutCheck c;
  const int64_t C = want.dim(1);
  REQUIRE(int64_t(got.size()) == want.size());
  for (size_t s = 0; s + 1 < batch.cuSeqlens.size(); ++s)
    for (int64_t t = batch.cuSeqlens[s]; t < batch.cuSeqlens[s + 1]; ++t)
      for (int64_t ch = 0; ch < C; ++ch) {
        uint16_t g = got[size_t(t * C + ch)];
        if (batch.slots[s] < 0) {
          ++c.paddingChecked;
          c.paddingNonZero += g != 0;
          continue;
        }
        ++c.checked;
        c.bad += !inBand(bf16ToF32(g), rounded(want(t, ch)));
      }
  return c;
}

/// Elements of `a` and `b` (both before their bf16 store) whose bf16 values
/// lie outside each other's band, over tokens [begin, end) of every live
/// sequence (relative to its start; end clipped to its length).
int64_t separated(const ref::PrefillBatch &batch, const Tensor<double> &a,
                  const Tensor<double> &b, int64_t begin, int64_t end, bool carriedOnly) {
  int64_t outside = 0;
  for (size_t s = 0; s + 1 < batch.cuSeqlens.size(); ++s) {
    if (batch.slots[s] < 0 || (carriedOnly && !batch.continueFromSlot[s]))
      continue;
    const int64_t start = batch.cuSeqlens[s], stop = batch.cuSeqlens[s + 1];
    for (int64_t t = start + begin; t < std::min(stop, start + end); ++t)
      for (int64_t ch = 0; ch < a.dim(1); ++ch)
        outside += !inBand(rounded(a(t, ch)), rounded(b(t, ch)));
  }
  return outside;
}

/// Random operands of one test at a kernel's geometry.
struct Operands {
  Tensor<uint16_t> zxbcdt, xBC, weight, bias, page;
};

Operands randomOperands(const ConvPrefillKernel &k, int64_t tokens, int64_t numSlots,
                        uint64_t seed) {
  Rng rng(seed);
  Operands o;
  // z and dt columns are random too: a kernel reading them would be caught.
  o.zxbcdt = randomBF16({tokens, k.rowStride()}, rng, -2, 2);
  o.xBC = sliceColumns(o.zxbcdt, k.inner, k.inner + k.channels);
  o.weight = randomBF16({k.channels, 4}, rng, -1, 1);
  o.bias = randomBF16({k.channels}, rng, -0.5, 0.5);
  o.page = randomBF16({numSlots, k.channels, 3}, rng, -2, 2);
  return o;
}

/// The reduced geometry CI runs: 200 channels are one full and one partial
/// block of 128; 8-token chunks; zxbcdt rows of 40 + 200 + 8 columns.
ConstantValues reducedConstants(int64_t rowsPerStep, bool fastSilu = false,
                                int64_t splits = 1) {
  return {{"inner", 40},  {"channels", 200},       {"heads", 8},
          {"block_t", 8}, {"block_c", 128},        {"rows_per_step", rowsPerStep},
          {"warps", 4},   {"fast_silu", fastSilu}, {"splits", splits}};
}

/// Runs `batch` through the kernel (chunks in order, or reversed: the
/// interpreter runs programs in grid order, so a sequence's last chunk then
/// runs before its first; with `chunkCapacity`, spare chunks pad the grid)
/// and checks everything against the reference.
void checkBatch(const ConvPrefillKernel &k, const ref::PrefillBatch &batch,
                int64_t numSlots, uint64_t seed, bool reverseChunks,
                int64_t chunkCapacity = 0) {
  const int64_t tokens = batch.cuSeqlens.back(), C = k.channels;
  Operands o = randomOperands(k, tokens, numSlots, seed);
  auto meta = prefillMetadata(batch, tokens, numSlots, k.blockT, chunkCapacity);
  REQUIRE(bool(meta));
  if (chunkCapacity)
    REQUIRE(meta->numChunks() == chunkCapacity);
  if (reverseChunks) {
    std::reverse(meta->chunkSequence.begin(), meta->chunkSequence.end());
    std::reverse(meta->chunkBegin.begin(), meta->chunkBegin.end());
    std::reverse(meta->chunkEnd.begin(), meta->chunkEnd.end());
  }
  Tensor<uint16_t> page = o.page;
  std::vector<uint16_t> out(size_t(tokens * C), kPoisonBF16);
  k.run(*meta, o.zxbcdt, o.weight, o.bias, page, out);
  Want want = reference(batch, o.xBC, o.weight, o.bias, o.page);

  OutCheck c = checkOut(batch, out, want.out);
  CHECK(c.bad == 0);
  CHECK(c.paddingNonZero == 0);
  CHECK(c.checked + c.paddingChecked == tokens * C); // every token, poison included
  // The final states are raw inputs: the pages must match bit for bit, and
  // slots no live sequence names (padding's included) stay byte-identical.
  CHECK(page.size() == numSlots * C * 3);
  int64_t pageDiffering = 0, written = 0;
  for (int64_t i = 0; i < page.size(); ++i)
    pageDiffering += page.data[size_t(i)] != want.page.data[size_t(i)];
  for (int64_t slot = 0; slot < numSlots; ++slot) {
    bool named = llvm::is_contained(batch.slots, slot);
    auto got = sliceRows(page, slot, slot + 1),
         before = sliceRows(o.page, slot, slot + 1);
    if (!named)
      CHECK(got == before);
    written += named && got != before;
  }
  CHECK(pageDiffering == 0);
  // Every live sequence's slot was rewritten (the oracle's states differ from
  // the random pages), so a kernel that never writes the page fails above.
  CHECK(written ==
        int64_t(llvm::count_if(batch.slots, [](int64_t s) { return s >= 0; })));

  // The counterfactuals the output band separates: a dropped initial state
  // (first 3 tokens of the carried sequences) and reversed taps.
  Want dropped = reference(batch, o.xBC, o.weight, o.bias, o.page, true);
  int64_t carriedHead = 0;
  for (size_t s = 0; s + 1 < batch.cuSeqlens.size(); ++s)
    if (batch.slots[s] >= 0 && batch.continueFromSlot[s])
      carriedHead +=
          std::min<int64_t>(3, batch.cuSeqlens[s + 1] - batch.cuSeqlens[s]) * C;
  REQUIRE(carriedHead > 0);
  CHECK(separated(batch, dropped.out, want.out, 0, 3, true) > carriedHead / 2);
  Tensor<uint16_t> reversed = o.weight;
  for (int64_t ch = 0; ch < C; ++ch)
    for (int64_t j = 0; j < 4; ++j)
      reversed(ch, j) = o.weight(ch, 3 - j);
  Want swapped = reference(batch, o.xBC, reversed, o.bias, o.page);
  CHECK(separated(batch, swapped.out, want.out, 0, tokens, false) > c.checked / 2);
}

} // namespace

TEST_CASE("conv_prefill on the interpreter: a varlen batch against f64 per sequence, "
          "chunks in either order",
          "[e2e][interp][prefill]") {
  const int64_t rowsPerStep = GENERATE(4, 8);
  // Two programs per chunk (4 rows each): a piece's halo from the piece
  // before, the state only in the first piece of a sequence's first chunk.
  const int64_t splits = rowsPerStep == 4 ? GENERATE(1, 2) : 1;
  const bool reverseChunks = GENERATE(false, true);
  const bool fastSilu = GENERATE(false, true);
  // 11 chunks; 16 adds 5 spare ones (in reversed order they run first).
  const int64_t chunkCapacity = GENERATE(0, 16);
  INFO("rows_per_step " << rowsPerStep << ", splits " << splits
                        << (reverseChunks ? ", chunks reversed" : "")
                        << (fastSilu ? ", fast_silu" : "") << ", chunk capacity "
                        << chunkCapacity);
  ConvPrefillKernel k(reducedConstants(rowsPerStep, fastSilu, splits));
  // Shorter than 3 (carried and fresh), shorter than a chunk, exactly one
  // chunk, exactly 3, several chunks with a ragged tail, and a padding
  // sequence; slots 1, 4 and 6 of 10 are named by no sequence.
  ref::PrefillBatch batch =
      makeBatch({1, 2, 13, 5, 8, 3, 19, 2}, {7, 2, 0, -1, 5, 9, 3, 8},
                {true, false, true, true, true, true, false, true});
  checkBatch(k, batch, 10, 21, reverseChunks, chunkCapacity);
}

TEST_CASE("conv_prefill at the full NemotronH geometry and default constants against f64",
          "[e2e][interp][prefill]") {
  const bool fastSilu = GENERATE(false, true);
  INFO((fastSilu ? "fast_silu" : "silu with division"));
  ConvPrefillKernel k({{"fast_silu", fastSilu}});
  REQUIRE(k.channels == 6144);
  REQUIRE(k.rowStride() == 10304);
  // 70 tokens: a full 64-token chunk and a ragged one.
  checkBatch(k, makeBatch({70, 2, 5}, {1, 0, -1}, {true, true, false}), 3, 22, false);
}

TEST_CASE(
    "conv_prefill: two legs carrying the conv state through the page equal the whole",
    "[e2e][interp][prefill]") {
  ConvPrefillKernel k(reducedConstants(4));
  const int64_t numSlots = 8, C = k.channels;
  const std::vector<int64_t> slots = {4, 1, 6, 2};
  const std::vector<int64_t> whole = {14, 4, 17, 6}, first = {5, 1, 11, 2};
  const std::vector<bool> carry = {true, false, true, false};
  ref::PrefillBatch all = makeBatch(whole, slots, carry);
  const int64_t tokens = all.cuSeqlens.back();
  Operands o = randomOperands(k, tokens, numSlots, 23);

  // The whole prefill at once, checked against the reference.
  Tensor<uint16_t> pageWhole = o.page;
  std::vector<uint16_t> outWhole(size_t(tokens * C), kPoisonBF16);
  k.run(llvm::cantFail(prefillMetadata(all, tokens, numSlots, k.blockT)), o.zxbcdt,
        o.weight, o.bias, pageWhole, outWhole);
  Want want = reference(all, o.xBC, o.weight, o.bias, o.page);
  OutCheck c = checkOut(all, outWhole, want.out);
  CHECK(c.bad == 0);
  CHECK(c.checked == tokens * C);
  CHECK(pageWhole == want.page);

  // The same tokens in two legs: each leg's rows packed in its own stream;
  // the second leg continues every sequence from the page the first wrote.
  std::vector<int64_t> second;
  std::vector<int64_t> rows[2];
  for (size_t s = 0; s < whole.size(); ++s) {
    second.push_back(whole[s] - first[s]);
    for (int64_t t = 0; t < whole[s]; ++t)
      rows[t < first[s] ? 0 : 1].push_back(all.cuSeqlens[s] + t);
  }
  auto gather = [](const Tensor<uint16_t> &t, const std::vector<int64_t> &index) {
    Tensor<uint16_t> g({int64_t(index.size()), t.dim(1)});
    for (size_t r = 0; r < index.size(); ++r)
      assignRows(g, int64_t(r), sliceRows(t, index[r], index[r] + 1));
    return g;
  };
  ref::PrefillBatch legs[2] = {makeBatch(first, slots, carry),
                               makeBatch(second, slots, {true, true, true, true})};
  auto runLegs = [&](const ref::PrefillBatch &secondLeg) {
    Tensor<uint16_t> page = o.page;
    std::vector<uint16_t> out(size_t(tokens * C), kPoisonBF16);
    const ref::PrefillBatch *batches[2] = {&legs[0], &secondLeg};
    for (int leg = 0; leg < 2; ++leg) {
      const int64_t n = int64_t(rows[leg].size());
      std::vector<uint16_t> legOut(size_t(n * C), kPoisonBF16);
      k.run(llvm::cantFail(prefillMetadata(*batches[leg], n, numSlots, k.blockT)),
            gather(o.zxbcdt, rows[leg]), o.weight, o.bias, page, legOut);
      for (int64_t r = 0; r < n; ++r)
        std::copy_n(legOut.begin() + r * C, C, out.begin() + rows[leg][size_t(r)] * C);
    }
    return std::make_pair(out, page);
  };
  auto [outLegs, pageLegs] = runLegs(legs[1]);
  // Each token sees the same four inputs in the same order either way, so the
  // legs reproduce the whole bit for bit.
  CHECK(outLegs == outWhole);
  CHECK(pageLegs == pageWhole);

  // The counterfactual: the second leg starting from zeros (a dropped carry)
  // moves its first tokens outside the band of the whole.
  ref::PrefillBatch fresh = legs[1];
  fresh.continueFromSlot.assign(4, false);
  auto [outDropped, pageDropped] = runLegs(fresh);
  int64_t outside = 0, examined = 0;
  for (size_t s = 0; s < whole.size(); ++s)
    for (int64_t t = first[s]; t < std::min(whole[s], first[s] + 3); ++t)
      for (int64_t ch = 0; ch < C; ++ch, ++examined) {
        size_t i = size_t((all.cuSeqlens[s] + t) * C + ch);
        outside += !inBand(bf16ToF32(outDropped[i]), bf16ToF32(outWhole[i]));
      }
  CHECK(examined == 3 * 4 * C);
  CHECK(outside > examined / 2);
}

TEST_CASE("conv_prefill then conv_update decode steps on the same page equal one longer "
          "prefill",
          "[e2e][interp][prefill]") {
  // The page layout (taps oldest first) and the arithmetic (bias, then taps
  // oldest first, silu) agree between prefill and decode: a sequence
  // prefilled to L tokens and decoded two more is the prefill of L + 2, bit
  // for bit.
  ConvPrefillKernel k(reducedConstants(4));
  const int64_t numSlots = 5, C = k.channels, steps = 2;
  const std::vector<int64_t> slots = {3, 0}, prefix = {5, 1};
  const std::vector<bool> carry = {true, false};
  ref::PrefillBatch longer =
      makeBatch({prefix[0] + steps, prefix[1] + steps}, slots, carry);
  const int64_t tokens = longer.cuSeqlens.back();
  Operands o = randomOperands(k, tokens, numSlots, 24);

  Tensor<uint16_t> pageLonger = o.page;
  std::vector<uint16_t> outLonger(size_t(tokens * C), kPoisonBF16);
  k.run(llvm::cantFail(prefillMetadata(longer, tokens, numSlots, k.blockT)), o.zxbcdt,
        o.weight, o.bias, pageLonger, outLonger);

  // The prefixes, packed, then one decode step per remaining token.
  ref::PrefillBatch shorter = makeBatch(prefix, slots, carry);
  Tensor<uint16_t> prefixRows({prefix[0] + prefix[1], k.rowStride()});
  assignRows(prefixRows, 0, sliceRows(o.zxbcdt, 0, prefix[0]));
  assignRows(prefixRows, prefix[0],
             sliceRows(o.zxbcdt, longer.cuSeqlens[1], longer.cuSeqlens[1] + prefix[1]));
  Tensor<uint16_t> page = o.page;
  std::vector<uint16_t> outPrefix(size_t(prefixRows.dim(0) * C), kPoisonBF16);
  k.run(llvm::cantFail(prefillMetadata(shorter, prefixRows.dim(0), numSlots, k.blockT)),
        prefixRows, o.weight, o.bias, page, outPrefix);
  Specialization updateSpec =
      specialize("conv_update", {{"channels", C}, {"block", 256}});
  interp::CompiledKernel update = compileKernel("conv_update", updateSpec);
  const std::vector<int32_t> slots32(slots.begin(), slots.end());
  int64_t compared = 0, differing = 0;
  for (int64_t step = 0; step < steps; ++step) {
    Tensor<uint16_t> xt({2, C});
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t ch = 0; ch < C; ++ch)
        xt(s, ch) = o.xBC(longer.cuSeqlens[s] + prefix[s] + step, ch);
    std::vector<uint16_t> outStep(size_t(2 * C), kPoisonBF16);
    using interp::Arg;
    llvm::Error err = update.run(
        {2, 1, 1}, {Arg::readOnlyBuffer(xt.data), Arg::buffer(page.data),
                    Arg::readOnlyBuffer(slots32), Arg::readOnlyBuffer(o.weight.data),
                    Arg::readOnlyBuffer(o.bias.data), Arg::buffer(outStep)});
    INFO(llvm::toString(std::move(err)));
    REQUIRE(!err);
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t ch = 0; ch < C; ++ch, ++compared)
        differing += outStep[size_t(s * C + ch)] !=
                     outLonger[size_t((longer.cuSeqlens[s] + prefix[s] + step) * C + ch)];
  }
  CHECK(compared == steps * 2 * C);
  CHECK(differing == 0);
  CHECK(page == pageLonger);
  // The prefix outputs are the longer prefill's first rows too.
  for (int64_t s = 0, r = 0; s < 2; ++s)
    for (int64_t t = 0; t < prefix[s]; ++t, ++r)
      CHECK(std::equal(outPrefix.begin() + r * C, outPrefix.begin() + (r + 1) * C,
                       outLonger.begin() + (longer.cuSeqlens[s] + t) * C));
}
