"""The registered kernels (models/: the Mamba2 ops and the examples) as functions.

Listed from the C++ KernelRegistry when the package is imported, so a kernel
registered there appears here with no Python change::

    import tilejit
    tilejit.kernels.gated_rmsnorm(y, z, w, out, rows, 1e-5, grid=(rows, 8))

Keyword arguments that name a compile-time constant (``width=4096``) specialize
the kernel; the registry has no notion of a grid, so the caller passes one.
"""

from . import _tilejit


class RegisteredKernel:
    """One registered kernel: build(**constants) -> KernelModule, or call it to
    run (numpy arrays: interpreter; CUDA tensors: GPU)."""

    def __init__(self, info):
        self.name = info.name
        self.summary = info.summary
        self.constants = {c.name: c.default for c in info.constants}
        self.__doc__ = info.summary + "\n\nConstants: " + ", ".join(
            f"{c.name}={c.default} ({c.help})" for c in info.constants)
        self._modules = {}

    def build(self, **constants):
        """The kernel specialized with `constants` (others keep their defaults)."""
        key = tuple(sorted(constants.items()))
        if key not in self._modules:
            self._modules[key] = _tilejit.build_registered(self.name, dict(constants))
        return self._modules[key]

    def __call__(self, *args, grid, stream=None, runtime=None, **constants):
        return self.build(**constants)(*args, grid=grid, stream=stream, runtime=runtime)

    def __repr__(self):
        return f"<tilejit kernel {self.name}: {self.summary}>"


class KernelSet:
    """Attribute access to every registered kernel; iterable, sorted by name."""

    def __init__(self):
        self._kernels = {k.name: RegisteredKernel(k) for k in _tilejit.registered_kernels()}

    def __getattr__(self, name):
        try:
            return self.__dict__["_kernels"][name]
        except KeyError:
            raise AttributeError(f"no registered kernel '{name}' (registered: "
                                 f"{', '.join(self._kernels)})") from None

    def __getitem__(self, name):
        return getattr(self, name)

    def __iter__(self):
        return iter(self._kernels.values())

    def __dir__(self):
        return list(self._kernels)
