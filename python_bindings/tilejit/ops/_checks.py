"""Checks of the values a kernel's correctness depends on, made where the data
lives: index tables and varlen metadata are device data tilejit.ops never
reads on the host (docs/numerics.md R8), so the kernels check them on the
device (built with `checked`). A call that fails a check touches no state,
writes NaN where its outputs would go, and leaves one error word per device;
`check_errors()` reads it (a synchronization), raises the ArgumentError it
describes and clears it. On the CPU (the interpreter) every op reads its word
as it returns, so the error is raised by the call itself; `set_checks("sync")`
(or TILEJIT_OPS_CHECKS=sync) does the same on the GPU, at the price of one
synchronization per call. docs/python.md, "Checks on the device".
"""

import os

import torch

from .. import _tilejit
from .._tilejit import ArgumentError
from . import _recording

# The op numbers the kernels record in the error word (bits 40-55).
OPS = ["selective_state_update", "causal_conv1d_update", "causal_conv1d_fn",
       "mamba_chunk_scan_combined_varlen"]
_OP_NUMBER = {name: i + 1 for i, name in enumerate(OPS)}
_CODES = _tilejit.op_error_codes()
_NAMES = {code: name for name, code in _CODES.items()}

# What each error says, by the op's own argument names. {i}: the word's index.
_SEQLENS = {"causal_conv1d_fn": "query_start_loc", "causal_conv1d_update": "query_start_loc"}
_MESSAGES = {
    "slot_out_of_range": "{slots}[{i}] is at or past the state's slot count",
    "dst_slot_out_of_range": "dst_state_batch_indices[{i}] is at or past the state's slot "
                             "count",
    "seqlens_start": "{cu}[0] is not 0",
    "seqlens_order": "{cu}[{i}] >= {cu}[{i1}]: the sequence boundaries must rise strictly "
                     "(empty sequences are refused, R9)",
    "seqlens_end": "{cu} does not end at the token count",
    "seqlens_range": "{cu}[{i}] .. {cu}[{i1}] is not a range of x's rows",
    "sequence_too_long": "sequence {i} ({cu}[{i}] .. {cu}[{i1}]) has more tokens than a "
                         "row holds (the slot tables' columns, or max_query_len)",
    "accepted_range": "num_accepted_tokens[{i}] is outside the tokens a row holds (the slot "
                      "tables' columns, or 1 .. max_query_len)",
    "column_range": "initial_state_idx[{i}] or block_idx_last_scheduled_token[{i}] is not a "
                    "column of conv_state_indices",
    "chunks_start": "cu_chunk_seqlens[0] is not 0",
    "chunks_order": "cu_chunk_seqlens[{i}] >= cu_chunk_seqlens[{i1}]: the chunk "
                    "boundaries must rise strictly",
    "chunks_end": "cu_chunk_seqlens does not end at the token count",
    "chunk_too_long": "chunk {i} is longer than chunk_size",
    "seq_idx_range": "seq_idx[{i}] is not a sequence of cu_seqlens",
    "seq_idx_order": "seq_idx[{i}] < seq_idx[{i0}]: the chunks' sequences must not go back",
    "chunk_crosses_sequence": "chunk {i} does not lie inside its sequence seq_idx[{i}]",
    "last_chunk_range": "last_chunk_indices[{i}] is not a chunk",
    "last_chunk_wrong": "last_chunk_indices[{i}] is not the last chunk of sequence {i}",
}
_SLOT_TABLES = {"selective_state_update": "state_batch_indices",
                "causal_conv1d_update": "conv_state_indices",
                "causal_conv1d_fn": "cache_indices"}

_words = {}  # torch.device -> int64 [1], the sticky error word
_mode = os.environ.get("TILEJIT_OPS_CHECKS", "async").strip().lower() or "async"
if _mode not in ("async", "sync"):
    raise ArgumentError(f"TILEJIT_OPS_CHECKS={_mode!r}: expected 'async' or 'sync'")


def set_checks(mode):
    """'async' (the default): a failed check on the GPU is raised by the next
    check_errors(); 'sync': by the call itself (one synchronization a call)."""
    global _mode
    if mode not in ("async", "sync"):
        raise ArgumentError(f"set_checks({mode!r}): expected 'async' or 'sync'")
    _mode = mode


def error_word(device):
    """The device's error word (zeros until a check fails), made once per device:
    a launch allocates nothing for it."""
    word = _words.get(device)
    if word is None:
        where = _indexed(device)
        # Made inside a capture, the word would be the graph's: every replay
        # would zero it again, and the memory would be the graph pool's.
        if where.type == "cuda" and torch.cuda.is_current_stream_capturing():
            raise ArgumentError(f"tilejit.ops: the first op call on {where} is inside a CUDA "
                                "graph capture; call the op once before capturing (that call "
                                "sets up the device's check word and compiles the kernel)")
        word = _words[device] = torch.zeros(1, dtype=torch.int64, device=where)
    return _recording.keep(word)


def _indexed(device):
    """`device` as a torch.device with its index ("cuda" is the current CUDA
    device), the key of its word."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def op_number(op):
    return _OP_NUMBER[op]


def code(name):
    return _CODES[name]


def describe(word):
    """The message of a non-zero error word."""
    op = OPS[(word >> 40) - 1] if 0 < (word >> 40) <= len(OPS) else f"op #{word >> 40}"
    name = _NAMES.get((word >> 32) & 0xff, f"error {(word >> 32) & 0xff}")
    i = word & 0xffffffff
    text = _MESSAGES.get(name, name).format(
        i=i, i0=i - 1, i1=i + 1, cu=_SEQLENS.get(op, "cu_seqlens"),
        slots=_SLOT_TABLES.get(op, "the slot table"))
    return f"tilejit.ops.{op}: {text} (checked on the device; the call wrote NaN and " \
           "touched no state)"


def check_errors(device=None):
    """Raises the ArgumentError a failed device-side check recorded on
    `device` (None: every device an op has run on), and clears it. Reads the
    word on the host: on the GPU, a synchronization of the whole device, since
    the ops that may have written it ran on any of its streams."""
    _read_errors(device, whole_device=True)


def _read_errors(device, whole_device):
    keys = [_indexed(device)] if device is not None else list(_words)
    for key in keys:
        word_tensor = _words.get(key)
        if word_tensor is None:
            continue
        if whole_device and word_tensor.is_cuda:
            torch.cuda.synchronize(word_tensor.device)
        word = int(word_tensor.item())
        if word:
            word_tensor.zero_()
            raise ArgumentError(describe(word))


def after(op, device):
    """What every checked op does once its kernels are launched: on the CPU,
    and in 'sync' mode on the GPU, raise what the checks found."""
    _recording.note_after(op, device)
    if device.type == "cpu" or (_mode == "sync" and
                                not torch.cuda.is_current_stream_capturing()):
        # The op ran on the current stream, which .item() waits for.
        _read_errors(device, whole_device=False)
