// R5d (docs/numerics.md#r5d-state-update-decode) with R4, R8 and R8s: the
// selective state update of decode. One program owns `block_p` rows of one
// head's [P, N] state in the slot's page for one sequence, updates them and
// writes y from the un-rounded f32 state. The default constants build the
// plans' kernel (one xBC row, dt inside in_proj's row, f32 page); the others
// serve tilejit.ops' selective_state_update (SsmUpdateConstants.cpp).
#include "SsmUpdate.h"
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <cmath>

namespace tilejit::models {
namespace {

Value castTo(Value v, DType t) { return v.dtype() == t ? v : v.to(t); }
Value toF32(Value v) { return castTo(v, DType::F32); }

/// The parameters of one specialization, declared in the plans' order first.
struct SsuParams {
  std::optional<Value> xbc, x, b, c, z, dstSlots, cuSeqlens, accepted, seed, padSlot,
      numSlots, numRows, columns;
  Value dt, a, dtBias, d, slots, page, y, dtMin, dtMax;
  OpCheck check;
};

SsuParams declareParams(Kernel &k, const SsuShape &s) {
  SsuParams p;
  if (s.split) {
    p.x = k.ptrParam("x", s.xType, {"?"});
    p.b = k.ptrParam("b", s.bType, {"?"});
    p.c = k.ptrParam("c", s.cType, {"?"});
  } else {
    p.xbc = k.ptrParam("xbc", s.xType, {"?", s.channels}); // after the conv
  }
  if (s.gated)
    p.z = k.ptrParam("z", s.zType, {"?"});
  p.dt = k.ptrParam("dt", s.dtType, {"?", s.dtStride}); // dt at dt_col + [0, heads)
  p.a = k.ptrParam(s.aIsLog ? "a_log" : "a", s.aType, {"?"});
  p.dtBias = k.ptrParam("dt_bias", s.dtBiasType, {"?"});
  p.d = k.ptrParam("d", s.dType, {"?"});
  p.slots = k.ptrParam("slots", s.slotType, {"?"});
  if (s.dstSlots)
    p.dstSlots = k.ptrParam("dst_slots", s.slotType, {"?"});
  if (s.varlen)
    p.cuSeqlens = k.ptrParam("cu_seqlens", s.cuType, {"?"});
  if (s.spec)
    p.accepted = k.ptrParam("num_accepted_tokens", s.acceptedType, {"?"});
  if (s.stochastic)
    p.seed = k.ptrParam("seed", DType::I64, {1});
  p.page = k.ptrParam("ssm_state", s.stateType,
                      {s.checked ? ParamDim("num_slots") : ParamDim("?"), s.heads,
                       s.headDim, s.stateSize});
  p.y = k.ptrParam("y", s.yType, {"?", s.inner});
  p.dtMin = k.scalarParam("dt_min", DType::F32);
  p.dtMax = k.scalarParam("dt_max", DType::F32);
  if (s.padId)
    p.padSlot = k.scalarParam("pad_slot", s.slotType);
  p.check = OpCheck::declare(k, s.checked);
  if (p.check.enabled)
    p.numSlots = k.scalarParam("num_slots", DType::I32);
  // What the metadata checks hold cu_seqlens and num_accepted_tokens to:
  // x's row count and the slot tables' columns.
  if (p.check.enabled && s.varlen)
    p.numRows = k.scalarParam("num_rows", DType::I64);
  if (p.check.enabled && s.spec)
    p.columns = k.scalarParam("table_columns", DType::I64);
  for (Value invariant : {p.a, p.dtBias, p.d})
    k.markInvariant(invariant);
  return p;
}

/// Where one row (token) of x and y are.
struct SsuRow {
  Value row64, x;
  View y;
};

/// The program's head, group and sequence; the per-row reads of one token.
class SsuProgram {
public:
  SsuProgram(const SsuShape &s, const SsuParams &p)
      : s(s), p(p), p0(programId(0) * s.bp), h(programId(1)), seq(programId(2)),
        g(h / (s.heads / s.groups)) {}

  SsuRow rowAt(Value row) const {
    Value row64 = row.to(DType::I64);
    Value x = s.split ? *p.x + row64 * s.xStride + h * s.headDim
                      : *p.xbc + row64 * s.channels + h * s.headDim;
    return {row64, x, makeView(p.y + row64 * s.inner + h * s.headDim, {s.headDim}, {1})};
  }
  /// Calls `body` for each row of the sequence (bos + t, t < tokens) in
  /// order, threading `init` (none when invalid): once, on `first`, without
  /// cu_seqlens.
  Value
  forTokens(Value init,
            const std::function<Value(const SsuRow &, Value t, Value)> &body) const {
    if (!s.varlen)
      return body(first, Value(), init);
    std::vector<Value> inits;
    if (init.valid())
      inits.push_back(init);
    auto last = forRange(0, tokens, 1, inits, [&](Value t, std::vector<Value> carried) {
      Value next = body(rowAt(bos + t), t, carried.empty() ? Value() : carried[0]);
      return carried.empty() ? carried : std::vector<Value>{next};
    });
    return last.empty() ? Value() : last[0];
  }

  Value isPad(Value slot) const {
    return p.padSlot ? (slot < 0) | (slot == *p.padSlot) : slot < 0;
  }
  Value isLive(Value slot) const {
    return p.padSlot ? (slot >= 0) & (slot != *p.padSlot) : slot >= 0;
  }
  View stateView(Value slot) const {
    Value base = p.page + slot.to(DType::I64) * (s.heads * s.headDim * s.stateSize);
    return makeView(base + h * (s.headDim * s.stateSize), {s.headDim, s.stateSize},
                    {s.stateSize, 1});
  }

  /// The f32 state `next` as the page at `slot` stores it: rounded to
  /// nearest even, or stochastically with bits keyed by (seed, slot, element).
  Value toPage(Value next, Value slot) const;

  /// R4 and R5 for one token of row `r`: the new f32 state from `state`
  /// (loaded from `slot` when not carried), handed to `keep` before y is
  /// computed and stored.
  Value step(const SsuRow &r, std::optional<Value> state, Value slot,
             llvm::function_ref<void(Value)> keep) const;

  const SsuShape &s;
  const SsuParams &p;
  Value p0, h, seq, g;
  /// The sequence's first row and (with cu_seqlens) its token count.
  Value bos, tokens;
  /// Stochastic rounding's seed (an i64 scalar).
  Value seed;
  SsuRow first;

private:
  /// A per-head parameter (a scalar) or, with its per_p bit, one per p as a
  /// [bp, N] tile (the same along n).
  Value perHead(Value base, int64_t bit) const;
  /// x, B and C of row `r` as [bp, N] f32 tiles in the state's layout.
  std::array<Value, 3> rowOperands(const SsuRow &r) const;
};

Value SsuProgram::perHead(Value base, int64_t bit) const {
  if (!(s.perP & bit))
    return toF32(load(base + h));
  View v = makeView(base + h * s.headDim, {s.headDim, s.stateSize}, {1, 0});
  return toF32(load(v, {p0, 0}, {s.bp, s.stateSize}));
}

std::array<Value, 3> SsuProgram::rowOperands(const SsuRow &r) const {
  // x, B and C are read as [bp, N] views with a zero stride (x[p] along n,
  // B[n] and C[n] along p): every operand arrives in the state's layout, so
  // nothing passes through shared memory.
  auto broadcastView = [&](Value base, int64_t pStride, int64_t nStride) {
    return makeView(base, {s.headDim, s.stateSize}, {pStride, nStride});
  };
  Value bRow, cRow;
  if (s.split) {
    bRow = *p.b + r.row64 * s.bStride + g * s.stateSize;
    cRow = *p.c + r.row64 * s.cStride + g * s.stateSize;
  } else {
    bRow = *p.xbc + r.row64 * s.channels + s.inner + g * s.stateSize;
    cRow = bRow + s.groups * s.stateSize;
  }
  Value x = toF32(load(broadcastView(r.x, 1, 0), {p0, 0}, {s.bp, s.stateSize}));
  Value b = toF32(load(broadcastView(bRow, 0, 1), {p0, 0}, {s.bp, s.stateSize}));
  Value c = toF32(load(broadcastView(cRow, 0, 1), {p0, 0}, {s.bp, s.stateSize}));
  return {x, b, c};
}

Value SsuProgram::toPage(Value next, Value slot) const {
  if (!s.stochastic)
    return castTo(next, s.stateType);
  // The seed and the slot key the program; an element's place in the slot's
  // rows is its counter, as vLLM keys its bits by the state offset.
  Value first = (h * s.headDim + p0) * s.stateSize;
  return stochasticRound(next, s.stateType,
                         randomU(roundingKey(seed, slot), first.to(DType::I32),
                                 {s.bp, s.stateSize}, s.mixes));
}

Value SsuProgram::step(const SsuRow &r, std::optional<Value> state, Value slot,
                       llvm::function_ref<void(Value)> keep) const {
  Value row64 = r.row64;
  // R4: dt' = clamp(softplus(dt + dt_bias)); the decay exp(A dt'), A = -exp(A_log).
  // dt_bias is read first, as the plans' kernel always did.
  Value bias = perHead(p.dtBias, kPerPDtBias);
  Value dtRow = p.dt + row64 * s.dtStride;
  Value dtRaw = s.perP & kPerPDt ? perHead(dtRow + s.dtCol, kPerPDt)
                                 : toF32(load(dtRow + (s.dtCol ? h + s.dtCol : h)));
  Value dtIn = dtRaw + bias;
  Value dt = minimum(maximum(s.softplusDt ? softplus(dtIn) : dtIn, p.dtMin), p.dtMax);
  Value a;
  if (s.perP & kPerPA)
    a = toF32(load(makeView(p.a + h * (s.headDim * s.stateSize), {s.headDim, s.stateSize},
                            {s.stateSize, 1}),
                   {p0, 0}, {s.bp, s.stateSize}));
  else
    a = toF32(load(p.a + h));
  Value decay = s.aIsLog ? exp(-exp(a) * dt) : exp(a * dt);
  auto [x, b, c] = rowOperands(r);
  // Built in the plans' kernel's order: its PTX stays the same.
  std::optional<View> src;
  if (!state)
    src = stateView(slot);
  Value next =
      (state ? *state : toF32(load(*src, {p0, 0}, {s.bp, s.stateSize}))) * decay +
      (x * dt) * b;
  // The stochastic page is stored after y, once C is dead: the hash's words
  // then share no registers with the reduction's operands.
  if (!s.stochastic)
    keep(next);
  Value xp = toF32(load(makeView(r.x, {s.headDim}, {1}), {p0}, {s.bp}));
  Value dSkip =
      s.perP & kPerPD
          ? toF32(load(makeView(p.d + h * s.headDim, {s.headDim}, {1}), {p0}, {s.bp}))
          : toF32(load(p.d + h));
  Value y = sum(next * c, 1) + dSkip * xp;
  if (p.z) {
    View zView = makeView(*p.z + row64 * s.zStride + h * s.headDim, {s.headDim}, {1});
    y = y * silu(toF32(load(zView, {p0}, {s.bp})));
  }
  store(r.y, {p0}, y.to(s.yType));
  if (s.stochastic)
    keep(next);
  return next;
}

/// The device-side range checks (checked = 1): a row whose slot or any of
/// its dst slots is past the page's `num_slots` writes NaN (`fillNan`),
/// touches no state and records the error. Returns the new `live`.
Value checkSlots(const SsuProgram &prog, Value slot, Value dstSlot, Value dstAt,
                 Value live, Value badMetadata, llvm::function_ref<void()> fillNan) {
  const SsuShape &s = prog.s;
  Value pages = prog.p.numSlots->to(s.slotType);
  Value srcPast = live & (slot >= pages), dstPast, dstInRange;
  if (s.spec) {
    // Every token's dst slot is checked before any state is touched (the
    // columns of a sequence longer than the table are not read).
    Value columns = s.varlen ? minimum(prog.tokens, prog.p.columns->to(DType::I32))
                             : constant(1, DType::I32);
    auto any =
        forRange(0, columns, 1, {constant(0, DType::I32)},
                 [&](Value t, std::vector<Value> carried) {
                   Value to = load(s.varlen ? dstAt + t : dstAt);
                   return std::vector<Value>{where(prog.isLive(to) & (to >= pages),
                                                   constant(1, DType::I32), carried[0])};
                 })[0];
    dstPast = live & (any != 0);
    dstInRange = any == 0;
  } else {
    dstPast = live & (dstSlot >= pages);
    dstInRange = dstSlot < pages;
  }
  Value past = srcPast | dstPast | badMetadata;
  ifThen(past, fillNan);
  // One program of the row records: the others would store the same word.
  Value recorder = (programId(0) == 0) & (prog.h == 0);
  prog.p.check.record(recorder & srcPast, OpError::SlotOutOfRange, prog.seq);
  prog.p.check.record(recorder & dstPast & (slot < pages), OpError::DstSlotOutOfRange,
                      prog.seq);
  return live & (slot < pages) & dstInRange & (badMetadata == 0);
}

/// The sequence's rows (`bos`, `tokens`) and, in speculative decoding, the
/// column of its source slot. With checks, metadata that would send the
/// program outside x's rows or the slot tables' columns is recorded and
/// clamped into range (the sequence then writes NaN there); returns whether
/// it failed.
Value readSequence(SsuProgram &prog, Value &srcColumn) {
  const SsuShape &s = prog.s;
  const SsuParams &p = prog.p;
  Value seq = prog.seq, bad = constant(0, DType::I1);
  Value recorder = (programId(0) == 0) & (prog.h == 0);
  prog.bos = seq;
  if (s.varlen) {
    Value begin = load(*p.cuSeqlens + seq), end = load(*p.cuSeqlens + seq + 1);
    if (p.check.enabled) {
      begin = begin.to(DType::I64), end = end.to(DType::I64);
      Value rows = *p.numRows;
      bad = (begin < 0) | (end < begin) | (end > rows);
      p.check.record(recorder & bad, OpError::SeqlensRange, seq);
      begin = minimum(maximum(begin, 0), rows);
      end = minimum(maximum(end, begin), rows);
      if (s.spec) {
        Value tooLong = (end - begin) > *p.columns;
        p.check.record(recorder & tooLong, OpError::SequenceTooLong, seq);
        bad = bad | tooLong;
      }
    }
    prog.bos = begin.to(DType::I32);
    prog.tokens = end.to(DType::I32) - prog.bos;
  }
  if (!s.spec)
    return bad;
  // vLLM's speculative decoding: the state after the last accepted token is
  // the one read.
  Value accepted = load(*p.accepted + seq);
  if (p.check.enabled) {
    accepted = accepted.to(DType::I64);
    Value outside = (accepted < 0) | (accepted > *p.columns);
    p.check.record(recorder & outside, OpError::AcceptedRange, seq);
    bad = bad | outside;
    accepted = where(outside, constant(1, DType::I64), accepted);
  }
  srcColumn = maximum(accepted.to(DType::I32) - 1, 0);
  return bad;
}

} // namespace

void buildSsmUpdate(Kernel &k, const Specialization &spec) {
  const SsuShape s = SsuShape::of(spec);
  const SsuParams p = declareParams(k, s);
  // Four elements per thread: the f32 state (16 bytes) and the bf16 operands
  // (8 bytes) then share one layout.
  k.setConfig({{s.bp, s.stateSize}, spec.get("warps"), 1, 4});
  dependentStart(spec);

  SsuProgram prog(s, p);
  Value seq = prog.seq, srcColumn;
  // Every token's state goes to its own dst column in speculative decoding.
  Value badMetadata = readSequence(prog, srcColumn);
  Value slotAt = s.slotsStride ? p.slots + seq * s.slotsStride : p.slots + seq;
  Value slot = load(s.spec ? slotAt + srcColumn : slotAt);
  Value dstAt = p.dstSlots
                    ? (s.dstStride ? *p.dstSlots + seq * s.dstStride : *p.dstSlots + seq)
                    : Value();
  Value dstSlot = p.dstSlots && !s.spec ? load(dstAt) : slot;
  if (!s.varlen)
    prog.first = prog.rowAt(seq);
  if (s.stochastic)
    prog.seed = load(*p.seed);

  const bool finalDst = p.dstSlots && !s.spec;
  Value padding = finalDst ? prog.isPad(slot) | prog.isPad(dstSlot) : prog.isPad(slot);
  Value live = finalDst ? prog.isLive(slot) & prog.isLive(dstSlot) : prog.isLive(slot);
  auto fillY = [&](double value) {
    prog.forTokens(Value(), [&](const SsuRow &r, Value, Value carried) {
      store(r.y, {prog.p0}, full({s.bp}, value, s.yType));
      return carried;
    });
  };
  ifThen(padding, [&] { fillY(0.0); });
  if (p.check.enabled)
    live = checkSlots(prog, slot, dstSlot, dstAt, live, badMetadata,
                      [&] { fillY(std::nan("")); });
  ifThen(live, [&] {
    std::optional<Value> first;
    if (s.varlen || s.spec)
      first = toF32(load(prog.stateView(slot), {prog.p0, 0}, {s.bp, s.stateSize}));
    // Without cu_seqlens or spec the one token's state is stored as soon as
    // it is computed (the plans' kernel's order); a varlen row stores its
    // last; spec stores every token's to its dst column.
    auto keep = [&](Value t, Value next) {
      if (s.spec) {
        Value to = load(s.varlen ? dstAt + t : dstAt);
        ifThen(prog.isLive(to),
               [&] { store(prog.stateView(to), {prog.p0, 0}, prog.toPage(next, to)); });
      } else if (!s.varlen) {
        Value to = finalDst ? dstSlot : slot;
        store(prog.stateView(to), {prog.p0, 0}, prog.toPage(next, to));
      }
    };
    Value last = prog.forTokens(
        first.value_or(Value()), [&](const SsuRow &r, Value t, Value carried) {
          return prog.step(r, carried.valid() ? std::optional(carried) : first, slot,
                           [&](Value next) { keep(t, next); });
        });
    if (s.varlen && !s.spec) {
      Value to = finalDst ? dstSlot : slot;
      store(prog.stateView(to), {prog.p0, 0}, prog.toPage(last, to));
    }
  });
}

/// Tuned per batch size: its tuning database entries are bucketed by rows.
KernelDef ssmUpdateKernel() {
  return {"ssm_update",         "R5d selective state update, SSM page updated in place",
          ssmUpdateConstants(), buildSsmUpdate,
          ssmUpdateRules(),     {"rows"}};
}

} // namespace tilejit::models
