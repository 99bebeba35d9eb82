"""What an op's first call with new metadata tells its plan (ops/_plan.py): the
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
        self.launches = []  # (Launch, _OpLauncher, ordinal, grid, args)
        self.made = []  # (factory, tensor)
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
    """torch.<factory>(*args, **kwargs): a tensor the op allocates anew on every
    call (an output, a scratch the kernels write, a random seed). A cached call
    makes it again with the same arguments, which must be metadata (sizes,
    dtypes, the device), never a tensor argument the plan would then hold. The
    factory is looked up by name on each call, as the full path's torch.<name>
    would be (a test's poisoned torch.empty serves cached calls too)."""
    make = functools.partial(_torch_call, factory, args, kwargs)
    tensor = make()
    recording = current()
    if recording is not None:
        recording.made.append((make, tensor))
    return tensor


def _torch_call(name, args, kwargs):
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
        recording.launches.append((launch, launcher, ordinal, grid, args))
