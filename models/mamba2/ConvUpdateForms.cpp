// conv_update's general form for tilejit.ops (vLLM's causal_conv1d_update):
// R3d over `tokens` tokens a row (or a varlen row of query_start_loc), any
// width, speculative decoding (num_accepted_tokens), prefix caching's 2-D slot
// tables, and every stride a run-time parameter. The page keeps taps oldest
// first; the rolling rules are vLLM's (docs/numerics.md#r3d-conv-update-decode).
#include "ConvForms.h"
#include "Registration.h"

#include <cmath>

namespace tilejit::models {
namespace {

Value isFalse(Value flag) {
  return where(flag, constant(0, DType::I1), constant(1, DType::I1));
}

/// The general form's parameters, in order, and its constants.
struct UpdateForm {
  int64_t channels, block, width, tokens;
  bool varlen, spec, apc, applySilu;
  ConvTypes types;
  Value x, page, slots, weight, bias, out;
  Value queryStartLoc, accepted, initialIdx, lastIdx; ///< with their forms
  Value xRowStride, xTokenStride, outRowStride, outTokenStride, slotRowStride;
  Value pageSlotStride, pageChannelStride, pageTapStride, numSlots;
  /// What the checks hold the metadata to: x's tokens (varlen) and the slot
  /// table's columns (apc).
  Value numTokens, slotColumns;
  std::optional<Value> nullBlockId;
  OpCheck check;
};

UpdateForm declareUpdateForm(Kernel &k, const Specialization &spec) {
  UpdateForm f;
  f.channels = spec.get("channels"), f.block = spec.get("block");
  f.width = spec.get("width"), f.tokens = spec.get("tokens");
  f.varlen = spec.get("varlen"), f.spec = spec.get("spec"), f.apc = spec.get("apc");
  f.applySilu = spec.get("silu");
  f.types = convTypes(spec);
  f.x = k.ptrParam("x", f.types.x, {"?"});                 // channels contiguous
  f.page = k.ptrParam("conv_state", f.types.state, {"?"}); // strides below
  f.slots = k.ptrParam("slots", slotType(spec), {"?"});    // [batch] or [batch, blocks]
  f.weight = k.ptrParam("weight", f.types.weight, {f.channels, f.width});
  if (spec.get("has_bias"))
    f.bias = k.ptrParam("bias", f.types.bias, {f.channels});
  f.out = k.ptrParam("out", f.types.out, {"?"});
  if (f.varlen)
    f.queryStartLoc = k.ptrParam("query_start_loc", DType::I32, {"?"}); // [batch + 1]
  if (f.spec)
    f.accepted = k.ptrParam("num_accepted_tokens", DType::I32, {"?"}); // [batch]
  if (f.apc) {
    f.initialIdx = k.ptrParam("initial_state_idx", DType::I32, {"?"});
    f.lastIdx = k.ptrParam("block_idx_last_scheduled_token", DType::I32, {"?"});
  }
  for (auto [value, name] : {std::pair{&f.xRowStride, "x_row_stride"},
                             {&f.xTokenStride, "x_token_stride"},
                             {&f.outRowStride, "out_row_stride"},
                             {&f.outTokenStride, "out_token_stride"},
                             {&f.slotRowStride, "slot_row_stride"},
                             {&f.pageSlotStride, "page_slot_stride"},
                             {&f.pageChannelStride, "page_channel_stride"},
                             {&f.pageTapStride, "page_tap_stride"}})
    *value = k.scalarParam(name, DType::I64);
  f.nullBlockId = declareNullBlock(k, spec);
  f.numSlots = k.scalarParam("num_slots", DType::I32);
  f.check = OpCheck::declare(k, spec.get("checked") != 0);
  if (f.check.enabled && f.varlen)
    f.numTokens = k.scalarParam("num_tokens", DType::I64);
  if (f.check.enabled && f.apc)
    f.slotColumns = k.scalarParam("slot_columns", DType::I64);
  k.setConfig({{f.block}, /*warps=*/4, /*stages=*/1, /*vector=*/1});
  k.markInvariant(f.weight);
  if (f.bias.valid())
    k.markInvariant(f.bias);
  return f;
}

/// One row's tokens: their first element in x and out, how many, and
/// whether query_start_loc failed its check (the row's range clamped into x).
struct RowTokens {
  Value x, out, count, bad;
};

RowTokens rowTokens(const UpdateForm &f, Value row) {
  Value bad = constant(0, DType::I1);
  if (!f.varlen) {
    Value row64 = row.to(DType::I64);
    return {f.x + row64 * f.xRowStride, f.out + row64 * f.outRowStride,
            constant(double(f.tokens), DType::I32), bad};
  }
  Value start = load(f.queryStartLoc + row).to(DType::I64);
  Value end = load(f.queryStartLoc + row + 1).to(DType::I64);
  if (f.check.enabled) {
    Value recorder = programId(1) == 0;
    bad = (start < 0) | (end < start) | (end > f.numTokens);
    f.check.record(recorder & bad, OpError::SeqlensRange, row);
    start = minimum(maximum(start, 0), f.numTokens);
    end = minimum(maximum(end, start), f.numTokens);
    Value tooLong = (end - start) > f.tokens;
    f.check.record(recorder & tooLong, OpError::SequenceTooLong, row);
    bad = bad | tooLong;
    end = minimum(end, start + f.tokens);
  }
  return {f.x + start * f.xTokenStride, f.out + start * f.outTokenStride,
          (end - start).to(DType::I32), bad};
}

/// The slot-table columns prefix caching reads and writes; with checks, a
/// column outside the table is recorded and read as column 0 (`bad` set).
std::pair<Value, Value> apcColumns(const UpdateForm &f, Value row, Value &bad) {
  Value initial = load(f.initialIdx + row), last = load(f.lastIdx + row);
  if (!f.check.enabled)
    return {initial, last};
  Value columns = f.slotColumns.to(DType::I32);
  Value outside = (initial < 0) | (initial >= columns) | (last < 0) | (last >= columns);
  f.check.record(outside & (programId(1) == 0), OpError::ColumnRange, row);
  bad = bad | outside;
  return {where(outside, constant(0, DType::I32), initial),
          where(outside, constant(0, DType::I32), last)};
}

/// The conv over the row's tokens from the window `taps` (f32, oldest first):
/// each output stored as it is made, the window sliding in registers.
void convolveRow(const UpdateForm &f, const RowTokens &row, Value cols64, Value inRange,
                 std::vector<Value> taps) {
  std::vector<Value> w;
  for (int64_t j = 0; j < f.width; ++j)
    w.push_back(load(f.weight + cols64 * f.width + j, inRange, 0.0).to(DType::F32));
  Value bias = f.bias.valid() ? load(f.bias + cols64, inRange, 0.0).to(DType::F32)
                              : zeros(inRange.shape(), DType::F32);
  forRange(0, row.count, 1, taps, [&](Value t, std::vector<Value> window) {
    Value t64 = t.to(DType::I64);
    Value xt = load(row.x + t64 * f.xTokenStride + cols64, inRange, 0.0);
    window.push_back(convert(asStateInput(xt, f.types), DType::F32));
    // R3d: the bias, then the taps oldest first; w[width - 1] multiplies the
    // current token.
    Value pre = bias;
    for (int64_t j = 0; j < f.width; ++j)
      pre = pre + w[j] * window[j];
    store(row.out + t64 * f.outTokenStride + cols64,
          convOutput(pre, f.types, f.applySilu), inRange);
    return std::vector<Value>(window.begin() + 1, window.end());
  });
}

/// The page's new taps, vLLM's rolling: with `stateLen` taps kept, the first
/// stateLen - count come from the old page from tap `offset + shift` (shift 1
/// in speculative decoding, else the row's token count) and the rest are the
/// row's tokens. Every old tap is loaded before the first store, so reading
/// and writing one slot cannot overlap.
void rollPage(const UpdateForm &f, const RowTokens &row, Value from, Value to,
              Value offset, Value cols64, Value inRange) {
  const int64_t most = f.width - 1 + (f.spec ? f.tokens - 1 : 0);
  Value stateLen = constant(double(most), DType::I32);
  if (f.varlen) // vLLM's varlen rows keep fewer taps by the tokens they lack
    stateLen = stateLen - (constant(double(f.tokens), DType::I32) - row.count);
  Value kept = stateLen - row.count;
  Value shift = f.spec ? constant(1.0, DType::I64) : row.count.to(DType::I64);
  std::vector<Value> taps;
  for (int64_t i = 0; i < most; ++i) {
    Value fromPage = constant(double(i), DType::I32) < kept;
    Value old =
        load(from + (offset + shift + i) * f.pageTapStride, inRange & fromPage, 0.0);
    Value token = (constant(double(i), DType::I32) - kept).to(DType::I64);
    Value xi = load(
        row.x + token * f.xTokenStride + cols64,
        inRange & (constant(double(i), DType::I32) < stateLen) & isFalse(fromPage), 0.0);
    taps.push_back(where(fromPage, old, asStateInput(xi, f.types)));
  }
  for (int64_t i = 0; i < most; ++i)
    store(to + i * f.pageTapStride, taps[i],
          inRange & (constant(double(i), DType::I32) < stateLen));
}

/// Outputs of a row that touches no state: zeros (padding) or NaN (a failed
/// check), one per token.
void fillRow(const UpdateForm &f, const RowTokens &row, Value cols64, Value inRange,
             Value failed) {
  Value fill = where(failed, full(inRange.shape(), std::nan(""), f.types.out),
                     zeros(inRange.shape(), f.types.out));
  forRange(0, row.count, 1, {}, [&](Value t, std::vector<Value>) {
    store(row.out + t.to(DType::I64) * f.outTokenStride + cols64, fill, inRange);
    return std::vector<Value>{};
  });
}

} // namespace

std::vector<KernelConstant> convUpdateFormConstants() {
  using R = ConstantRange;
  return {
      {"width",
       4,
       "conv width K (the page keeps K - 1 taps or more)",
       {},
       R::between(2, 8)},
      {"tokens",
       1,
       "tokens per row; with varlen the most a row has (max_query_len)",
       {},
       R::between(1, 64)},
      {"varlen", 0, "1: rows are query_start_loc's ranges of x's tokens", {}, R::flag()},
      {"spec",
       0,
       "1: speculative decoding: num_accepted_tokens picks the window's first tap",
       {},
       R::flag()},
      {"apc",
       0,
       "1: prefix caching: 2-D slot table read at initial_state_idx, written at "
       "block_idx_last_scheduled_token",
       {},
       R::flag()},
      {"general",
       0,
       "1: the general form even where the plans' form would do (strides as parameters)",
       {},
       R::flag()}};
}

bool convUpdateIsPlanForm(const Specialization &spec) {
  return !spec.get("general") && convFormIsDefault(spec) && spec.get("width") == 4 &&
         spec.get("tokens") == 1 && !spec.get("varlen") && !spec.get("spec") &&
         !spec.get("apc");
}

void buildConvUpdateForm(Kernel &k, const Specialization &spec) {
  const UpdateForm f = declareUpdateForm(k, spec);
  dependentStart(spec);
  Value row = programId(0);
  Value cols = programId(1) * f.block + arange(0, f.block);
  Value inRange = cols < f.channels;
  Value cols64 = cols.to(DType::I64);
  Value slotRow = f.slots + row.to(DType::I64) * f.slotRowStride;
  const RowTokens tokens = rowTokens(f, row);
  Value badMetadata = tokens.bad;
  Value inSlot = load(slotRow), outSlot = inSlot;
  if (f.apc) {
    auto [initial, last] = apcColumns(f, row, badMetadata);
    inSlot = load(slotRow + initial), outSlot = load(slotRow + last);
  }
  Value live = realSlot(inSlot, f.nullBlockId);
  // vLLM's speculative decoding: the window starts at tap accepted - 1.
  Value accepted = f.spec ? load(f.accepted + row) : constant(1, DType::I32);
  Value failed = constant(0, DType::I1);
  if (f.check.enabled) {
    Value pages = f.numSlots.to(inSlot.dtype());
    Value slotPast = live & ((inSlot >= pages) | (outSlot < 0) | (outSlot >= pages));
    f.check.record(slotPast & (programId(1) == 0), OpError::SlotOutOfRange, row);
    // A window past the page's taps: a live row's accepted count outside 1 .. tokens.
    Value acceptedBad = live & ((accepted < 1) | (accepted > f.tokens));
    f.check.record(acceptedBad & (programId(1) == 0), OpError::AcceptedRange, row);
    failed = slotPast | acceptedBad | badMetadata;
    live = live & isFalse(failed);
  }
  auto pageOf = [&](Value slot) {
    return f.page + slot.to(DType::I64) * f.pageSlotStride + cols64 * f.pageChannelStride;
  };
  ifThen(live, [&] {
    Value offset = accepted.to(DType::I64) - 1;
    std::vector<Value> window;
    for (int64_t j = 0; j + 1 < f.width; ++j)
      window.push_back(
          convert(load(pageOf(inSlot) + (offset + j) * f.pageTapStride, inRange, 0.0),
                  DType::F32));
    rollPage(f, tokens, pageOf(inSlot), pageOf(outSlot), offset, cols64, inRange);
    convolveRow(f, tokens, cols64, inRange, window);
  });
  ifThen(isFalse(live), [&] { fillRow(f, tokens, cols64, inRange, failed); });
}

} // namespace tilejit::models
