"""selective_state_update (mamba_ssm's, with vLLM's slot and output arguments):
docs/numerics.md R5d with R4 and R8, on the registered `ssm_update` kernel."""

import torch

from . import _checks
from ._launch import (as_tensor, check, check_aligned, check_distinct_slots, check_no_overlap,
                      check_pad_slot_id, check_strides, fail, host_ints, launch, pack_rows,
                      packed_rows, per_head, row_stride, slot_table)

PAD_SLOT_ID = -1


def selective_state_update(state, x, dt, A, B, C, D=None, z=None, dt_bias=None,
                           dt_softplus=False, state_batch_indices=None,
                           dst_state_batch_indices=None, pad_slot_id=PAD_SLOT_ID, out=None,
                           *, check_slots=False):
    """One decode step of the SSM (R5d), the state updated in place.

    state (slots, H, P, N) f32; x (b, H, P) bf16; dt (b, H, P) bf16, stride 0
    over P (or (b, H)); A (H, P, N) f32, stride 0 over P and N (or (H,));
    dt_bias and D (H, P), stride 0 over P (or (H,)); B and C (b, G, N) bf16.
    Row i reads state[state_batch_indices[i]] and writes
    state[dst_state_batch_indices[i]] (both default to i); a negative index
    is a padding row: no state touched, output 0; an index at or past the
    slot count is checked on the device (docs/python.md, "Checks on the
    device"). Index tables are int32 or int64, read as given. out (b, H, P)
    bf16 or f32, returned (a new bf16 tensor when None). The single-head form
    (state (slots, P, N), x (b, P), ...) is the H = 1 case. check_slots=True
    (a debug option) also reads the indices on the host to refuse two rows on
    one slot (R8), which a CUDA graph capture forbids.
    """
    op = "selective_state_update"
    state, x, dt, A, B, C, D, z, dt_bias, state_batch_indices, dst_state_batch_indices, out = (
        as_tensor(op, n, v) for n, v in
        [("state", state), ("x", x), ("dt", dt), ("A", A), ("B", B), ("C", C), ("D", D),
         ("z", z), ("dt_bias", dt_bias), ("state_batch_indices", state_batch_indices),
         ("dst_state_batch_indices", dst_state_batch_indices), ("out", out)])
    if z is not None:
        raise fail(op, "z (the gate y * silu(z)) is not supported: tilejit applies the gate "
                       "in the norm (rms_norm_gated, docs/numerics.md R6); pass z=None")
    check_pad_slot_id(op, pad_slot_id)
    check(op, "state", state, (torch.float32,))
    if state.dim() == 3:  # the single-head form
        state, x, dt, B, C, out = (t.unsqueeze(1) if t is not None else None
                                   for t in (state, x, dt, B, C, out))
        A, D, dt_bias = (t.unsqueeze(0) if t is not None else None for t in (A, D, dt_bias))
        single_head = True
    else:
        single_head = False
    if state.dim() != 4:
        raise fail(op, f"state has shape {tuple(state.shape)}, expected (slots, nheads, "
                       "headdim, dstate) or (slots, dim, dstate)")
    num_slots, heads, head_dim, dstate = state.shape
    check_strides(op, "state", state, (heads * head_dim * dstate, head_dim * dstate, dstate, 1))
    device = state.device
    check(op, "x", x, (torch.bfloat16,), (None, heads, head_dim), device)
    rows = x.shape[0]
    check(op, "B", B, (torch.bfloat16,), (rows, None, dstate), device)
    groups = B.shape[1]
    check(op, "C", C, (torch.bfloat16,), (rows, groups, dstate), device)
    if heads % groups:
        raise fail(op, f"nheads ({heads}) is not a multiple of ngroups ({groups})")
    check(op, "dt", dt, (torch.bfloat16,), device=device)
    if dt.dim() == 3:
        check(op, "dt", dt, (torch.bfloat16,), (rows, heads, head_dim))
        if dt.stride(2) != 0 and head_dim != 1:
            raise fail(op, f"dt of shape {tuple(dt.shape)} varies over headdim (strides "
                           f"{tuple(dt.stride())}); tilejit takes one dt per head: pass a "
                           "stride-0 expand of (batch, nheads)")
        dt = dt[:, :, 0]
    check(op, "dt", dt, (torch.bfloat16,), (rows, heads))
    check_strides(op, "dt", dt, (None, 1))
    A = per_head(op, "A", check(op, "A", A, (torch.float32,), device=device), heads,
                 (head_dim, dstate) if A.dim() == 3 else ())
    D = (per_head(op, "D", check(op, "D", D, (torch.float32,), device=device), heads,
                  (head_dim,) if D.dim() == 2 else ())
         if D is not None else torch.zeros(heads, device=device))
    dt_bias = (per_head(op, "dt_bias", check(op, "dt_bias", dt_bias, (torch.float32,),
                                             device=device), heads,
                        (head_dim,) if dt_bias.dim() == 2 else ())
               if dt_bias is not None else torch.zeros(heads, device=device))
    if out is None:
        out = torch.empty(rows, heads, head_dim, dtype=torch.bfloat16, device=device)
    check(op, "out", out, (torch.bfloat16, torch.float32), (rows, heads, head_dim), device)
    check_strides(op, "out", out, (heads * head_dim, head_dim, 1))
    check_no_overlap(op, "out", out, state=state, x=x, dt=dt, B=B, C=C)

    if state_batch_indices is not None:
        slots, wide = slot_table(op, "state_batch_indices", state_batch_indices, rows, device)
    else:
        if rows > num_slots:
            raise fail(op, f"{rows} rows but {num_slots} state slots, and no "
                           "state_batch_indices")
        slots, wide = torch.arange(rows, dtype=torch.int32, device=device), False
    dst = None
    if dst_state_batch_indices is not None:
        dst, dst_wide = slot_table(op, "dst_state_batch_indices", dst_state_batch_indices,
                                   rows, device)
        if dst_wide != wide:  # one table dtype per launch
            slots, dst, wide = slots.to(torch.int64), dst.to(torch.int64), True
    _check_rows(op, slots, dst, num_slots, check_slots)

    channels = heads * head_dim + 2 * groups * dstate
    xbc = packed_rows([x, B, C], channels)
    if xbc is None:  # not column ranges of one xBC row: one copy into that layout
        xbc = pack_rows([x, B, C])
    else:
        for name, t in zip("xBC", [x, B, C]):
            check_aligned(op, name, t)
    check_aligned(op, "x, B and C packed", xbc, (0,))
    check_aligned(op, "state", state, (0, 1, 2))
    check_aligned(op, "out", out, (0, 1))
    # block_p is a power of two (a tile dimension); a head_dim it does not
    # divide gets a last, partial block, which the kernel's views mask.
    block_p = min(16, 1 << (head_dim - 1).bit_length())
    constants = dict(heads=heads, head_dim=head_dim, state=dstate, groups=groups,
                     block_p=block_p, a_log=0, dt_softplus=int(bool(dt_softplus)),
                     dt_stride=row_stride(op, "dt", dt, heads),
                     y_f32=int(out.dtype == torch.float32), dst_slots=int(dst is not None),
                     slots_i64=int(wide), checked=1)
    args = dict(xbc=xbc, dt=dt, a=A, dt_bias=dt_bias, d=D, slots=slots, ssm_state=state,
                y=out.view(rows, heads * head_dim), dt_min=float("-inf"), dt_max=float("inf"),
                errors=_checks.error_word(device), op=_checks.op_number(op),
                num_slots=num_slots)
    if dst is not None:
        args["dst_slots"] = dst
    launch("ssm_update", constants, device, (-(-head_dim // block_p), heads, rows), **args)
    _checks.after(op, device)
    return out.squeeze(1) if single_head else out


def _check_rows(op, slots, dst, num_slots, check_slots):
    """R8 on the host: live rows name distinct slots in range, and no row
    writes a slot another row reads."""
    src = host_ints(op, "state_batch_indices", slots, check_slots)
    if src is None:
        return
    if dst is None:
        check_distinct_slots(op, "state_batch_indices", src, num_slots)
        return
    to = host_ints(op, "dst_state_batch_indices", dst, check_slots)
    live = [i for i in range(len(src)) if src[i] >= 0 and to[i] >= 0]
    check_distinct_slots(op, "state_batch_indices",
                         [src[i] if i in live else -1 for i in range(len(src))], num_slots)
    check_distinct_slots(op, "dst_state_batch_indices",
                         [to[i] if i in live else -1 for i in range(len(to))], num_slots)
    reads = {src[i]: i for i in live}
    for i in live:
        if to[i] in reads and reads[to[i]] != i:
            raise fail(op, f"dst_state_batch_indices[{i}] = {to[i]} is the slot row "
                           f"{reads[to[i]]} reads: the write would race with that read (R8)")
