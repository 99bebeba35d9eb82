// R5p's state passing over spans (docs/numerics.md#r5p-chunked-ssd-prefill): after
// ssd_span_state summed each span's tail from zero, one program per block of a
// head's [P, N] state walks the spans in order and leaves each span the state it
// enters with and the state its tail starts from, for ssd_prefill's spans (or
// ssd_chunk_scan's one-chunk spans) to run in parallel.
#include "Registration.h"
#include "SsdChunk.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

void buildSsdStatePass(Kernel &k, const Specialization &spec) {
  const int64_t heads = spec.get("heads"), block = spec.get("block");
  const int64_t size = spec.get("head_dim") * spec.get("state");
  // [spans]: the slot of each span's tail sequence, -1 for padding
  Value spanSlot = k.ptrParam("span_slot", DType::I32, {"spans"});
  Value spanFlags = k.ptrParam("span_flags", DType::I32, {"spans"}); // [spans]
  Value spanDecay = k.ptrParam("span_decay", DType::F32, {"?"});     // [spans * heads]
  // [spans, heads, head_dim * state]: each span's tail state in, entering state out
  Value spanStates = k.ptrParam("span_states", DType::F32, {"?", heads, size});
  // [spans, heads, head_dim * state]: the state each span's tail starts from,
  // written for the spans it starts in (kSpanTailStarts)
  Value spanTail = k.ptrParam("span_tail", DType::F32, {"?", heads, size});
  // [slots, heads, head_dim * state]
  Value page =
      k.ptrParam("ssm_state", elementTypeOf(spec, "page_type"), {"?", heads, size});
  Value numSpans = k.scalarParam("spans", DType::I32);
  // With write_page: where a sequence's final state goes (the page again in
  // the plans), written at its last span (kSpanTailEnds).
  const bool writePage = spec.get("write_page") != 0;
  Value pageOut = writePage
                      ? k.ptrParam("ssm_state_out", elementTypeOf(spec, "state_type"),
                                   {"?", heads, size})
                      : Value();
  k.setConfig({{block}, spec.get("warps"), 1});

  Value off = programId(0) * block, h = programId(1);
  auto entry = [&](Value base, Value index, Dim elements) {
    return makeView(base + (index.to(DType::I64) * heads + h.to(DType::I64)) * size,
                    {elements}, {1});
  };
  auto elementsIf = [&](Value when) {
    return Dim(where(when, constant(double(size), DType::I32), constant(0, DType::I32)));
  };
  // `unroll` spans a step: their loads issue together, before the first of
  // them is needed, instead of each after the previous span's store (the
  // walk's latency). The spans past the last read and write nothing.
  const int64_t unroll = spec.get("unroll");
  struct SpanLoads {
    Value z, valid, flags, slot, starts, initial, tail, decay;
  };
  auto loadSpan = [&](Value z) {
    SpanLoads l{z, unroll > 1 ? z < numSpans : Value()};
    auto scalar = [&](Value ptr, double other) {
      return l.valid.valid() ? load(ptr, l.valid, other) : load(ptr);
    };
    // The span enters with the previous span's exit state (used when it
    // starts mid-sequence). Its tail starts from that state, or
    // (kSpanTailStarts) at a sequence start, from the page
    // (kSpanTailFromPage) or zeros.
    l.flags = scalar(spanFlags + z, 0), l.slot = scalar(spanSlot + z, -1);
    l.starts = (l.flags & kSpanTailStarts) != 0;
    // Only a tail that starts here reads the page (the load is empty otherwise).
    Value fromPage = l.starts & (l.slot >= 0) & ((l.flags & kSpanTailFromPage) != 0);
    l.initial =
        load(entry(page, maximum(l.slot, 0), elementsIf(fromPage)), {off}, {block})
            .to(DType::F32);
    l.tail = load(entry(spanStates, z, l.valid.valid() ? elementsIf(l.valid) : Dim(size)),
                  {off}, {block});
    l.decay = scalar(spanDecay + z.to(DType::I64) * heads + h, 0.0);
    return l;
  };
  auto passSpan = [&](const SpanLoads &l, Value carried) {
    store(entry(spanStates, l.z, l.valid.valid() ? elementsIf(l.valid) : Dim(size)),
          {off}, carried);
    Value start = where(l.starts, l.initial, carried);
    // ssd_prefill reads span_tail only in a span its tail sequence starts in
    // (elsewhere the tail starts from span_states): the other spans' entries
    // are left unwritten, a third of the pass's traffic for one long sequence.
    store(entry(spanTail, l.z, elementsIf(l.starts)), {off}, start);
    Value next = start * exp(l.decay) + l.tail;
    if (writePage) {
      Value ends = ((l.flags & kSpanTailEnds) != 0) & (l.slot >= 0);
      store(entry(pageOut, maximum(l.slot, 0), elementsIf(ends)), {off},
            next.to(elementTypeOf(spec, "state_type")));
    }
    return l.valid.valid() ? where(l.valid, next, carried) : next;
  };
  forRange(0, numSpans, unroll, {zeros({block}, DType::F32)},
           [&](Value z, std::vector<Value> carried) {
             std::vector<SpanLoads> loads;
             for (int64_t u = 0; u < unroll; ++u)
               loads.push_back(loadSpan(u ? z + u : z));
             Value state = carried[0];
             for (const SpanLoads &l : loads)
               state = passSpan(l, state);
             return std::vector<Value>{state};
           });
}

KernelDef ssdStatePassKernel() {
  return {"ssd_state_pass",
          "R5p's state passing over spans: each span's entering state",
          {{"heads", 64, "SSM heads (H)", {}, sizeRange()},
           {"head_dim", 64, "head dim (P)", {}, sizeRange()},
           {"state", 128, "state size (N)", {}, tileRange()},
           {"block",
            1024,
            "state elements (of head_dim x state) per program",
            {},
            tileRange()},
           {"warps", 4, "warps per program", {8}, warpsRange()},
           elementTypeF32("page_type", "the page (ssm_state)"),
           {"write_page",
            0,
            "1: the pass writes each sequence's final state (ssm_state_out) at its "
            "last span, for one-chunk spans, where no walk writes it (ssd_chunk_scan); "
            "0: ssd_prefill writes the pages",
            {},
            ConstantRange::flag()},
           elementTypeF32("state_type", "the states written (ssm_state_out)"),
           {"unroll",
            1,
            "spans per step of the walk, their loads issued together",
            {2, 4},
            ConstantRange::powersOfTwo(1, 8)}},
          buildSsdStatePass,
          {productAtMost({"heads", "head_dim", "state"}, INT32_MAX, "i32 page offsets")}};
}

} // namespace tilejit::models
