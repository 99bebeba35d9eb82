"""tilejit.ops' plan cache: a call is keyed (`_tilejit._op_signature`: each
tensor's dtype, device, shape, strides and address modulo 16, which tensors
share memory and how far apart, every other argument's value); the second call
with a key runs the full path (every check, the specialization, the launches)
and is recorded as a plan; later calls with the key replay the plan's steps:
the tensors made anew per call, the prepared kernels launched with the call's
data pointers. docs/python-ops.md, "The plan cache".

A kernel argument is replayed as a byte offset from a base: a tensor of the call
(a view of it, or of several that overlap, is one for every call with that key),
a tensor made per call (_recording.per_call, which may compute from the call's
tensors on the device) or one the plan keeps (_recording.keep). A call whose
kernel arguments lie anywhere else, which reads device data on the host
(_recording.uncacheable), or which is recorded inside a CUDA graph capture (its
tensors would be the graph's) is not cached. Plans are never evicted: a graph
captured from a cached call reads the tensors the plan keeps."""

import functools

import torch

from .. import _tilejit
from . import _checks, _recording
from ._launch import current_stream, span_bytes

_tilejit._set_signature_types(torch.Tensor, torch.dtype)

# Plans per op; past it, calls with new keys take the full path (no eviction).
MAX_PLANS = 256
_caches = []  # every op's (plans, keys seen once)
_retired = []  # what dropped plans kept: a captured graph may still read it


def clear():
    """Drops every op's plans and the keys it has seen, so each op's next call
    takes its full path (bench/ops_launch_bench.py times it). What the plans
    kept stays allocated, since a CUDA graph captured from a cached call reads
    it."""
    for plans, seen in _caches:
        _retired.extend(plan.kept for plan in plans.values() if plan)
        plans.clear()
        seen.clear()


def cached(fn):
    """Decorates an op of tilejit.ops with its plan cache. A key is recorded the
    second time it comes: a shape that comes once (a prefill batch of a new
    token count) costs the key alone, never a recording."""
    plans = {}  # key -> _Plan, or False for a key that takes the full path
    seen = set()  # keys that came once
    _caches.append((plans, seen))

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _recording.current() is not None:  # inside another op's recorded call
            return fn(*args, **kwargs)
        signature = _tilejit._op_signature(args, kwargs)
        if signature is None:
            return fn(*args, **kwargs)
        key = signature[0]
        plan = plans.get(key)
        if plan:
            return plan(signature[1], args, kwargs)
        if plan is False or len(plans) >= MAX_PLANS:
            return fn(*args, **kwargs)
        if key not in seen:
            if len(seen) >= 4 * MAX_PLANS:
                seen.clear()
            seen.add(key)
            return fn(*args, **kwargs)
        recording = _recording.begin()
        try:
            result = fn(*args, **kwargs)
        finally:
            _recording.end()
        plan = _Plan.of(recording, signature[1], args, kwargs, result)
        if plan is not None:
            seen.discard(key)
            # Another thread may have stored one meanwhile: a graph captured
            # from it reads what it keeps, so it stays.
            plans.setdefault(key, plan)
        return result

    call.plans = plans  # for the tests
    return call


class _Plan:
    """The steps of one recorded call (tensors made, kernels launched), replayed
    with the new call's tensors. Bases: the call's tensors (in the order the key
    lists them), the kept tensors, then the made ones in the order made."""

    @classmethod
    def of(cls, recording, addresses, args, kwargs, result):
        """The plan of a recorded call, False when it cannot be replayed, None
        when it was made inside a CUDA graph capture (an eager call plans it)."""
        launches = [step for step in recording.steps if step[0] == "launch"]
        ordinals = {step[3] for step in launches}
        if not recording.cacheable or len(ordinals) != 1:
            return False
        ordinal = ordinals.pop()
        if ordinal >= 0 and torch.cuda.is_current_stream_capturing():
            return None
        refs = [("arg", i, v) for i, v in enumerate(args) if isinstance(v, torch.Tensor)] + \
               [("arg", k, v) for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
        assert len(refs) == len(addresses)
        refs += [("kept", i, t) for i, t in enumerate(recording.kept)]
        steps, made, regions = [], 0, _regions(refs)
        try:
            for step in recording.steps:
                if step[0] == "make":
                    steps.append(_make_step(step, refs))
                    first = len(refs)
                    made = _add_made(step[4], refs, made)
                    regions += [(i, t.data_ptr(), t.data_ptr() + span_bytes(t))
                                for i, (_, _, t) in enumerate(refs[first:], first)]
                else:
                    _, launch, launcher, _, grid, launch_args = step
                    steps.append(launcher.prepare(
                        grid, launch_args, _sources(launch, launch_args, refs, regions)))
            shape = _result(result, refs, regions)
        except _NotReplayable:
            return False
        return cls(ordinal, steps, recording.kept, recording.after, shape)

    def __init__(self, ordinal, steps, kept, after, result):
        self.ordinal, self.steps, self.after, self.result = ordinal, steps, after, result
        self.kept = kept  # alive as long as the plan: launches read their addresses
        self.kept_addresses = tuple(t.data_ptr() for t in kept)
        if ordinal >= 0 and kept:
            # What the recorded call made to keep was filled on its stream; a
            # cached call on another stream reads it without waiting.
            torch.cuda.current_stream(ordinal).synchronize()

    def __call__(self, addresses, args, kwargs):
        fixed, made, made_addresses = addresses + self.kept_addresses, [], ()
        stream = current_stream(self.ordinal) if self.ordinal >= 0 else None
        for step in self.steps:
            if type(step) is _Make:
                made_addresses += step(args, kwargs, made, self.kept)
            elif stream is None:
                step.run(fixed + made_addresses)
            else:
                step.launch(stream, fixed + made_addresses)
        if self.after is not None:
            _checks.after(*self.after)
        return _rebuild(self.result, args, kwargs, made, self.kept)


class _NotReplayable(Exception):
    pass


class _Make:
    """A per_call step: the factory called with the call's own tensors where the
    recorded call passed its tensors or earlier results."""

    def __init__(self, factory, args, kwargs, fixed):
        self.factory, self.args, self.kwargs = factory, args, kwargs
        self.fixed = fixed  # no tensor among the arguments

    def __call__(self, call_args, call_kwargs, made, kept):
        """Appends the result's tensors to `made`; returns their addresses."""
        if self.fixed:
            result = self.factory(*self.args, **self.kwargs)
        else:
            get = functools.partial(_value, call_args, call_kwargs, made, kept)
            result = self.factory(*map(get, self.args),
                                  **{k: get(v) for k, v in self.kwargs.items()})
        tensors = result if isinstance(result, tuple) else (result,)
        made.extend(tensors)
        return tuple(t.data_ptr() for t in tensors)


def _make_step(step, refs):
    _, factory, args, kwargs, _ = step
    symbolic = [_ref(v, refs) for v in args], {k: _ref(v, refs) for k, v in kwargs.items()}
    fixed = not any(isinstance(v, torch.Tensor) for v in (*args, *kwargs.values()))
    return _Make(factory, tuple(symbolic[0]), symbolic[1], fixed)


def _add_made(result, refs, made):
    tensors = result if isinstance(result, tuple) else (result,)
    if not all(isinstance(t, torch.Tensor) for t in tensors):
        raise _NotReplayable()
    refs += [("made", made + i, t) for i, t in enumerate(tensors)]
    return made + len(tensors)


class _Ref:
    """A tensor of the replayed call: ("arg", index or name), ("kept", index) or
    ("made", index)."""

    def __init__(self, kind, where):
        self.kind, self.where = kind, where


def _ref(value, refs):
    """A recorded factory argument as the replay passes it: a tensor by what it
    is to the call (identity), anything else as it was."""
    if not isinstance(value, torch.Tensor):
        return value
    for kind, where, t in refs:
        if t is value:
            return _Ref(kind, where)
    raise _NotReplayable()


def _value(args, kwargs, made, kept, value):
    if type(value) is not _Ref:
        return value
    if value.kind == "made":
        return made[value.where]
    if value.kind == "kept":
        return kept[value.where]
    return args[value.where] if isinstance(value.where, int) else kwargs[value.where]


def _base_of(t, refs, regions):
    """(base, byte offset) of t's memory: from the first base of the region
    (_regions) that holds all of it. A view reaching past every region relies
    on addresses the key does not hold: not replayable."""
    address, span = t.data_ptr(), span_bytes(t)
    for anchor, start, end in regions:
        if start <= address and address + span <= end:
            return anchor, address - refs[anchor][2].data_ptr()
    raise _NotReplayable()


def _regions(refs):
    """(first base, start, end) of each region of memory among `refs`. The
    call's tensors that share memory lie at distances the key fixes
    (transitively, over the pairs that overlap: same device, neither empty),
    so such a group spans one region, and a view inside it (x, B and C read as
    one xBC row) is an offset from the group's first tensor; a kept (or made)
    tensor is a region of its own."""
    extents = [(t.data_ptr(), span_bytes(t), t.device, kind == "arg") for kind, _, t in refs]
    group = list(range(len(extents)))
    for j, (b, nb, db, arg_b) in enumerate(extents):
        for i, (a, na, da, arg_a) in enumerate(extents[:j]):
            if arg_a and arg_b and da == db and na and nb and a < b + nb and b < a + na:
                old, new = group[j], group[i]
                group = [new if g == old else g for g in group]
    regions = {}
    for i, (start, size, _, _) in enumerate(extents):
        anchor, lo, hi = regions.get(group[i], (i, start, start + size))
        regions[group[i]] = (anchor, min(lo, start), max(hi, start + size))
    return list(regions.values())


def _sources(launch, args, refs, regions):
    """Each pointer argument of a recorded launch as (base, byte offset)."""
    return {p.name: _base_of(args[p.name], refs, regions)
            for p in launch.module.params if p.pointer}


def _result(result, refs, regions):
    """How a cached call builds the op's return value: a tensor of the call,
    one it made, one the plan keeps, a view of one of them, None, or a tuple."""
    if result is None:
        return None
    if isinstance(result, tuple):
        return ("tuple", tuple(_result(r, refs, regions) for r in result))
    if not isinstance(result, torch.Tensor):
        raise _NotReplayable()
    for kind, where, t in refs:
        if t is result:
            return (kind, where)
    base, offset = _base_of(result, refs, regions)
    kind, where, tensor = refs[base]
    if tensor.dtype != result.dtype or offset % result.element_size():
        raise _NotReplayable()
    return ("view", (kind, where), tuple(result.shape), result.stride(),
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
