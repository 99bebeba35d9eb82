"""tilejit.ops' plan cache: an op's first call with given metadata runs its full
path (every check, the specialization, the launches) and is recorded as a plan;
later calls with the same key (`_tilejit._op_signature`: each tensor's dtype,
device, shape, strides and address modulo 16, which tensors share memory and how
far apart, every other argument's value) only allocate the outputs and launch
the plan's prepared kernels with the new data pointers. docs/python.md, "The
plan cache".

A kernel argument is replayed as a byte offset from a base: a caller's tensor
(a view of it, such as a column range or a reshape, is one for every call with
that key), a tensor the call makes anew (_recording.per_call) or one the plan
keeps (_recording.keep). A call whose kernel arguments come from anywhere else
(a tensor computed by torch from the values of another), which reads device data
on the host (_recording.uncacheable), or which is first made inside a CUDA graph
capture (its tensors would be the graph's) is not cached: calls with its key
take the full path. Plans are never evicted: a graph captured from a cached call
reads the tensors the plan keeps."""

import functools

import torch

from .. import _tilejit
from . import _checks, _recording
from ._launch import current_stream, span_bytes

_tilejit._set_signature_types(torch.Tensor, torch.dtype)

# Plans per op; past it, calls with new keys take the full path (no eviction).
MAX_PLANS = 256
_caches = []  # every op's plans
_retired = []  # what dropped plans kept: a captured graph may still read it


def clear():
    """Drops every op's plans, so each op's next call takes its full path
    (bench/ops_launch_bench.py times that first call). What the plans kept
    stays allocated, since a CUDA graph captured from a cached call reads it."""
    for plans in _caches:
        _retired.extend(plan.kept for plan in plans.values() if plan)
        plans.clear()


def cached(fn):
    """Decorates an op of tilejit.ops with its plan cache."""
    plans = {}  # key -> _Plan, or False for a key that takes the full path
    _caches.append(plans)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _recording.current() is not None:  # inside another op's recorded call
            return fn(*args, **kwargs)
        signature = _tilejit._op_signature(args, kwargs)
        if signature is None:
            return fn(*args, **kwargs)
        plan = plans.get(signature[0])
        if plan:
            return plan(signature[1], args, kwargs)
        if plan is False or len(plans) >= MAX_PLANS:
            return fn(*args, **kwargs)
        recording = _recording.begin()
        try:
            result = fn(*args, **kwargs)
        finally:
            _recording.end()
        plan = _Plan.of(recording, signature[1], args, kwargs, result)
        if plan is not None:
            plans[signature[0]] = plan
        return result

    call.plans = plans  # for the tests
    return call


class _Plan:
    """The launches of one recorded call, replayed with new data pointers."""

    @classmethod
    def of(cls, recording, addresses, args, kwargs, result):
        """The plan of a recorded call, False when it cannot be replayed, None
        when it was made inside a CUDA graph capture (an eager call plans it)."""
        if not recording.cacheable or not recording.launches:
            return False
        ordinals = {launch[2] for launch in recording.launches}
        if len(ordinals) != 1:
            return False
        ordinal = ordinals.pop()
        if ordinal >= 0 and torch.cuda.is_current_stream_capturing():
            return None
        callers = [(i, v) for i, v in enumerate(args) if isinstance(v, torch.Tensor)] + \
                  [(k, v) for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
        made = [t for _, t in recording.made]
        bases = [t for _, t in callers] + made + recording.kept
        assert len(callers) == len(addresses)
        extents = [(t.data_ptr(), span_bytes(t)) for t in bases]
        try:
            launches = [launcher.prepare(grid, args_, _sources(launch, args_, extents))
                        for launch, launcher, _, grid, args_ in recording.launches]
            shape = _result(result, callers, made, recording.kept, extents)
        except _NotReplayable:
            return False
        return cls(ordinal, launches, [make for make, _ in recording.made], recording.kept,
                   recording.after, shape)

    def __init__(self, ordinal, launches, makes, kept, after, result):
        self.ordinal, self.launches, self.makes, self.after = ordinal, launches, makes, after
        self.kept = kept  # alive as long as the plan: launches read their addresses
        self.kept_addresses = tuple(t.data_ptr() for t in kept)
        self.result = result

    def __call__(self, addresses, args, kwargs):
        made = [make() for make in self.makes]
        bases = addresses + tuple(t.data_ptr() for t in made) + self.kept_addresses
        if self.ordinal < 0:
            for launch in self.launches:
                launch.run(bases)
        else:
            stream = current_stream(self.ordinal)
            for launch in self.launches:
                launch.launch(stream, bases)
        if self.after is not None:
            _checks.after(*self.after)
        return _rebuild(self.result, args, kwargs, made, self.kept)


class _NotReplayable(Exception):
    pass


def _base_of(t, extents):
    """(base, byte offset) of the first base whose memory holds all of t's (the
    key fixes how bases that share memory lie, so any of them gives the same
    address on a later call). A view reaching past every base, such as columns
    read across several arguments, relies on addresses the key does not hold."""
    address, span = t.data_ptr(), span_bytes(t)
    for i, (start, size) in enumerate(extents):
        if start <= address and address + span <= start + size:
            return i, address - start
    raise _NotReplayable()


def _sources(launch, args, extents):
    """Each pointer argument of a recorded launch as (base, byte offset)."""
    return {p.name: _base_of(args[p.name], extents) for p in launch.module.params if p.pointer}


def _result(result, callers, made, kept, extents):
    """How a cached call builds the op's return value: a caller's tensor, one it
    made, one the plan keeps, a view of one of them, None, or a tuple."""
    if result is None:
        return None
    if isinstance(result, tuple):
        return ("tuple", tuple(_result(r, callers, made, kept, extents) for r in result))
    if not isinstance(result, torch.Tensor):
        raise _NotReplayable()
    for kind, tensors in (("made", made), ("kept", kept)):
        for i, t in enumerate(tensors):
            if t is result:
                return (kind, i)
    for where, t in callers:
        if t is result:
            return ("arg", where)
    base, offset = _base_of(result, extents)
    source = ([("arg", w) for w, _ in callers] + [("made", i) for i in range(len(made))] +
              [("kept", i) for i in range(len(kept))])[base]
    tensor = ([t for _, t in callers] + made + kept)[base]
    if tensor.dtype != result.dtype or offset % result.element_size():
        raise _NotReplayable()
    return ("view", source, tuple(result.shape), result.stride(),
            offset // result.element_size())


def _rebuild(shape, args, kwargs, made, kept):
    if shape is None:
        return None
    kind = shape[0]
    if kind == "tuple":
        return tuple(_rebuild(s, args, kwargs, made, kept) for s in shape[1])
    if kind == "made":
        return made[shape[1]]
    if kind == "kept":
        return kept[shape[1]]
    if kind == "arg":
        where = shape[1]
        return args[where] if isinstance(where, int) else kwargs[where]
    source = _rebuild(shape[1], args, kwargs, made, kept)
    return source.as_strided(shape[2], shape[3], source.storage_offset() + shape[4])
