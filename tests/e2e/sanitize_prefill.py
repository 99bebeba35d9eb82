"""sanitize_kernels.py's recipes for the prefill kernels over one varlen batch (R9):
conv_prefill (R3) and ssd_prefill (R5p) alone and as the span schedule's three
launches, each against the sequential f64 reference with its pages (R8)."""
import math

import numpy as np

from sanitize_builds import constants, randn_bf16, rng
from sanitize_decode import dt_params, dt_prime
from sanitize_support import (BF16_ULP, bf16, bf16_bits, check, check_exact, from_bf16, get,
                              launch, poison, put, separates, silu, spans_of)


def varlen_batch(lengths, chunk):
    """R9: cu_seqlens and chunks of <= `chunk` tokens tiling each sequence from
    its start (chunk_seq, chunk_begin, chunk_end)."""
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    seq, begin, end = [], [], []
    for i in range(len(lengths)):
        for b in range(cu[i], cu[i + 1], chunk):
            seq.append(i), begin.append(b), end.append(min(b + chunk, cu[i + 1]))
    return cu, *(np.array(v, np.int32) for v in (seq, begin, end))


# A mixed batch: continued and fresh sequences, a padding sequence, sequences
# shorter than a chunk and than the conv's 3 taps, one over two chunks, one a
# chunk and a token; (length, slot, continue from the slot).
PREFILL_BATCH = [(70, 4, 1), (2, 0, 0), (5, -1, 1), (33, 6, 0), (1, 2, 1), (20, 1, 0)]
PREFILL_SLOTS = 7


def prefill_batch(chunk):
    lengths, slots, init = (np.array(v, np.int32) for v in zip(*PREFILL_BATCH))
    return (lengths, slots, init) + varlen_batch(lengths, chunk)


def conv_prefill(name):
    g = constants(name)
    inner, channels, heads = g["inner"], g["channels"], g["heads"]
    lengths, slots, init, cu, cseq, cbegin, cend = prefill_batch(g["block_t"])
    tokens, chunks = int(cu[-1]), len(cseq)
    zxbcdt = randn_bf16(tokens, inner + channels + heads)
    w, bias = randn_bf16(channels, 4, scale=0.5), randn_bf16(channels, scale=0.1)
    page = randn_bf16(PREFILL_SLOTS, channels, 3)
    page_buf, out = put(bf16_bits(page)), poison((tokens, channels), np.uint16)
    launch(name, (math.ceil(channels / g["block_c"]), chunks), put(bf16_bits(zxbcdt)),
           put(bf16_bits(w)), put(bf16_bits(bias)), put(cu), put(slots), put(init), put(cseq),
           put(cbegin), put(cend), page_buf, out, PREFILL_SLOTS)

    def reference(carry):
        """R3 per sequence: u(-3..-1) from the slot (continued) or zeros."""
        want, state = np.zeros((tokens, channels)), page.copy()
        for i, (t0, t1) in enumerate(zip(cu[:-1], cu[1:])):
            if slots[i] < 0:
                continue
            past = page[slots[i]].T if (init[i] and carry) else np.zeros((3, channels))
            u = np.concatenate([past, zxbcdt[t0:t1, inner:inner + channels]])
            for t in range(t1 - t0):
                want[t0 + t] = bf16(silu(bias + (w.T * u[t:t + 4]).sum(0)))
            state[slots[i]] = u[-3:].T
        return want, state

    want, want_state = reference(carry=True)
    live_rows = np.repeat(slots >= 0, lengths)
    atol = np.where(live_rows[:, None], 1e-6, 0.0)  # padding rows: exact zeros
    check(f"{name}.out", from_bf16(get(out)), want, atol, BF16_ULP, tokens * channels)
    # The new taps are copies of inputs; the other slots stay untouched.
    check_exact(f"{name}.conv_state", get(page_buf), bf16_bits(want_state))
    # A dropped carry changes the first 3 tokens of each continued sequence.
    dropped, _ = reference(carry=False)
    head = np.concatenate([np.arange(t0, min(t0 + 3, t1))
                           for i, (t0, t1) in enumerate(zip(cu[:-1], cu[1:]))
                           if init[i] and slots[i] >= 0])
    separates(f"{name}.out: dropped carry", dropped[head], want[head], atol[head], BF16_ULP, 0.5)


SPAN_CHUNKS = 2  # spans of two chunks: sequences cross spans, spans hold several


def ssd_spans(name):
    ssd_prefill("ssd_prefill@spans")


def ssd_prefill(name):
    g = constants(name)
    heads, p, n, groups, q = g["heads"], g["head_dim"], g["state"], g["groups"], g["chunk"]
    inner, channels = heads * p, heads * p + 2 * groups * n
    lengths, slots, init, cu, cseq, cbegin, cend = prefill_batch(q)
    tokens, chunks = int(cu[-1]), len(cseq)
    xbc = randn_bf16(tokens, channels, scale=0.5)
    zxbcdt = randn_bf16(tokens, g["dt_stride"], scale=0.5)  # dt at dt_col + h; the rest unread
    dt = zxbcdt[:, g["dt_col"]:g["dt_col"] + heads]
    a_log, dt_bias, d, dt_min, dt_max = dt_params(heads)
    page = rng.standard_normal((PREFILL_SLOTS, heads, p, n)).astype(np.float32)
    page_buf, y = put(page), poison((tokens, inner), np.uint16)
    args = (put(bf16_bits(xbc)), put(bf16_bits(zxbcdt)), put(a_log), put(dt_bias), put(d),
            put(cu), put(slots), put(init), put(cseq), put(cbegin), put(cend), page_buf, y,
            chunks, dt_min, dt_max)
    if not g.get("span_states"):
        launch(name, (math.ceil(p / g["block_p"]), heads), *args)
    else:
        # ssd_span_state, ssd_state_pass, then this build over the spans.
        first, sslot, flags = spans_of(cu, slots, init, q, SPAN_CHUNKS)
        spans = len(sslot)
        states = poison((spans, heads, p, n), np.float32)
        tail = poison((spans, heads, p, n), np.float32)
        decay = poison((spans * heads,), np.float32)
        span_chunk = put(first)
        launch("ssd_span_state", (math.ceil(p / constants("ssd_span_state")["block_p"]), heads,
                                  spans),
               args[0], args[1], args[2], args[3], args[5], args[8], span_chunk, args[9],
               args[10], states, decay, dt_min, dt_max)
        launch("ssd_state_pass", (p * n // constants("ssd_state_pass")["block"], heads),
               put(sslot), put(flags), decay, states, tail, page_buf, spans)
        launch(name, (math.ceil(p / g["block_p"]), heads, spans), *args, span_chunk, states,
               tail)

    def reference(carry):
        """R5, sequentially in f64, per sequence from the slot or zeros."""
        want_y, state = np.zeros((tokens, heads, p)), page.astype(np.float64)
        a = -np.exp(a_log.astype(np.float64))
        for i, (t0, t1) in enumerate(zip(cu[:-1], cu[1:])):
            if slots[i] < 0:
                continue
            s = state[slots[i]].copy() if (init[i] and carry) else np.zeros((heads, p, n))
            for t in range(t0, t1):
                x = xbc[t, :inner].reshape(heads, p)
                b, c = (np.repeat(m, heads // groups, 0)
                        for m in xbc[t, inner:].reshape(2, groups, n))
                dtp = dt_prime(dt[t], dt_bias, dt_min, dt_max)
                s = np.exp(a * dtp)[:, None, None] * s + \
                    dtp[:, None, None] * x[:, :, None] * b[:, None, :]
                want_y[t] = (s * c[:, None, :]).sum(-1) + d[:, None] * x
            state[slots[i]] = s
        return want_y.reshape(tokens, inner), state

    want_y, want_state = reference(carry=True)
    live_rows = np.repeat(slots >= 0, lengths)
    live = slots[slots >= 0]
    # R5p's bands vs the sequential f64 R5 (<= 256 tokens): bf16 y 5e-2 / 5e-2,
    # f32 state 8e-3 / 5e-3; padding rows exact zeros.
    check(f"{name}.y", from_bf16(get(y)), want_y, np.where(live_rows[:, None], 5e-2, 0.0), 5e-2,
          tokens * inner)
    got_state = get(page_buf)
    check(f"{name}.state", got_state[live], want_state[live], 8e-3, 5e-3,
          live.size * heads * p * n)
    others = np.setdiff1d(np.arange(PREFILL_SLOTS), live)
    check_exact(f"{name}.state.other_slots", got_state[others], page[others])
    # The zeroed twin: a dropped carry, visible in the final state of the
    # one-token continued sequence and in the first tokens' y.
    dropped_y, dropped_state = reference(carry=False)
    one = slots[[i for i in range(len(lengths)) if lengths[i] == 1 and init[i]]]
    separates(f"{name}.state: dropped carry", dropped_state[one], want_state[one], 8e-3, 5e-3,
              0.5)
    first = cu[:-1][(init != 0) & (slots >= 0)]
    separates(f"{name}.y: dropped carry", dropped_y[first], want_y[first], 5e-2, 5e-2, 0.5)
