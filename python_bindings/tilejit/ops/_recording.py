"""What the call an op records (ops/_plan.py) tells its plan: the
launches it made, the tensors it made that a cached call must make again
(per_call), the ones a cached call may reuse (keep), and whether anything it
did depends on more than the metadata (uncacheable). Outside a recording each
of these is a no-op, so the ops' full path stays the same."""

import functools
import threading

import torch

_local = threading.local()


class Recording:
    """One op call's record, filled while its full path runs."""

    def __init__(self):
        # In call order: ("make", factory, args, kwargs, result) and
        # ("launch", Launch, _OpLauncher, ordinal, grid, args).
        self.steps = []
        self.kept = []
        self.after = None  # (op, device) when the op read its device checks
        self.cacheable = True


def current():
    """The thread's recording, or None."""
    return getattr(_local, "recording", None)


def begin():
    recording = _local.recording = Recording()
    return recording


def end():
    _local.recording = None


def per_call(factory, *args, **kwargs):
    """factory(*args, **kwargs): what the op makes anew on every call, a tensor
    or a tuple of tensors (an output, a scratch the kernels write, a random
    seed, metadata computed on the device from a tensor argument). A cached call
    calls it again, in the same order among the launches, with the same
    arguments but for tensors: an argument of the op or an earlier result of
    per_call is passed as this call's; any other tensor makes the call
    uncacheable. Everything else must follow from the call's metadata (sizes,
    dtypes, the device). `factory` is a callable or the name of a torch
    function, looked up on each call as the full path's torch.<name> would be
    (a test's poisoned torch.empty serves cached calls too)."""
    if isinstance(factory, str):
        factory = functools.partial(_torch_call, factory)
    result = factory(*args, **kwargs)
    recording = current()
    if recording is not None:
        recording.steps.append(("make", factory, args, kwargs, result))
    return result


def _torch_call(name, *args, **kwargs):
    return getattr(torch, name)(*args, **kwargs)


def keep(tensor):
    """A tensor the kernels only read, whose values follow from the call's
    metadata and scalars (a default parameter of zeros, a default slot table, a
    scale given as a number) or which lives on (the device's error word): a
    cached call reuses it."""
    recording = current()
    if recording is not None:
        recording.kept.append(tensor)
    return tensor


def uncacheable():
    """This call did something a plan cannot repeat (read device data on the
    host): calls with its metadata always take the full path."""
    recording = current()
    if recording is not None:
        recording.cacheable = False


def note_after(op, device):
    """The op reads its device checks as it returns (_checks.after)."""
    recording = current()
    if recording is not None:
        recording.after = (op, device)


def note_launch(launch, launcher, ordinal, grid, args):
    recording = current()
    if recording is not None:
        recording.steps.append(("launch", launch, launcher, ordinal, grid, args))
