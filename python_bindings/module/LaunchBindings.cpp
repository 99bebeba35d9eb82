// tilejit.ops' launch path: one Python -> C++ call per launch. The arguments come
// by parameter name in the op's dict, tensors (data_ptr, dtype, device) for
// pointers and numbers for scalars, and are packed here into the core's
// arguments, into buffers kept from one launch to the next. A cached plan's
// launches are prepared here once and refilled with data pointers per call.
#include "Bindings.h"
#include "tilejit/python/KernelModule.h"
#include "tilejit/python/Runtime.h"

namespace tilejit::python {

const TensorAttributes &tensorAttributes() {
  static const TensorAttributes *interned = new TensorAttributes();
  return *interned;
}

namespace {
const TensorAttributes &names() { return tensorAttributes(); }

py::object callMethod(py::handle object, PyObject *name) {
  PyObject *result = PyObject_CallMethodObjArgs(object.ptr(), name, nullptr);
  if (!result)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

/// One kernel module's parameters as tilejit.ops passes them, and the kernel on
/// one device (or the interpreter) that they are packed for.
class OpLauncher : public std::enable_shared_from_this<OpLauncher> {
public:
  /// `dtypes[i]`: the torch dtypes parameter i takes (pointers; None for scalars).
  /// `device` is a CUDA ordinal with `kernel`, or -1 (the interpreter) without.
  OpLauncher(std::shared_ptr<KernelModule> module, std::shared_ptr<DeviceKernel> kernel,
             int device, const py::list &dtypes)
      : module(std::move(module)), kernel(std::move(kernel)), device(device) {
    const std::vector<Param> &params = this->module->params();
    if (dtypes.size() != params.size())
      throw Error(ErrorKind::Argument, "kernel '" + this->module->name() +
                                           "': " + std::to_string(dtypes.size()) +
                                           " dtype entries for " +
                                           std::to_string(params.size()) + " parameters");
    for (size_t i = 0; i < params.size(); ++i)
      slots.push_back({py::str(params[i].name), params[i].pointer,
                       tilejit::isFloat(params[i].type),
                       py::reinterpret_borrow<py::object>(dtypes[i])});
  }

  /// Launches on `stream` (a CUstream as int).
  void launch(uint64_t stream, const py::tuple &grid, const py::dict &args) {
    pack(args, deviceArgs, [](py::handle tensor, DeviceArg &arg) {
      arg.kind = DeviceArg::Kind::Pointer;
      arg.address = callMethod(tensor, names().dataPtr).cast<uint64_t>();
    });
    std::array<uint32_t, 3> dims = gridOf<uint32_t>(grid);
    py::gil_scoped_release release;
    kernel->launch(stream, dims, deviceArgs);
  }

  /// Runs on the interpreter: each tensor is passed with the bytes its view spans.
  void run(const py::tuple &grid, const py::dict &args) {
    pack(args, hostArgs, [](py::handle tensor, HostArg &arg) {
      arg.kind = HostArg::Kind::Buffer;
      arg.data =
          reinterpret_cast<void *>(callMethod(tensor, names().dataPtr).cast<uintptr_t>());
      arg.bytes = spanBytes(tensor);
      arg.writable = true;
    });
    std::array<int64_t, 3> dims = gridOf<int64_t>(grid);
    py::gil_scoped_release release;
    module->run(dims, hostArgs);
  }

  /// One launch of a cached plan: the arguments packed (and checked) now, each
  /// pointer parameter named by `sources` (name -> (base, byte offset)) as an
  /// offset into the bases a call passes.
  class Prepared {
  public:
    Prepared(std::shared_ptr<OpLauncher> launcher, const py::tuple &grid,
             const py::dict &args, const py::dict &sources)
        : launcher(std::move(launcher)) {
      OpLauncher &l = *this->launcher;
      if (l.device >= 0) {
        l.pack(args, deviceArgs,
               [](py::handle, DeviceArg &arg) { arg.kind = DeviceArg::Kind::Pointer; });
        deviceGrid = gridOf<uint32_t>(grid);
      } else {
        l.pack(args, hostArgs, [](py::handle tensor, HostArg &arg) {
          arg.kind = HostArg::Kind::Buffer;
          arg.bytes = spanBytes(tensor);
          arg.writable = true;
        });
        hostGrid = gridOf<int64_t>(grid);
      }
      for (size_t i = 0; i < l.slots.size(); ++i) {
        if (!l.slots[i].pointer)
          continue;
        PyObject *source = PyDict_GetItemWithError(sources.ptr(), l.slots[i].name.ptr());
        if (!source)
          throw l.argumentError("no source for pointer '" + std::string(l.slots[i].name) +
                                "'");
        auto pair = py::reinterpret_borrow<py::tuple>(source);
        pointers.push_back({i, pair[0].cast<size_t>(), pair[1].cast<int64_t>()});
      }
    }

    /// Launches on `stream` with the pointers `bases[source] + offset`. The
    /// arguments are filled into a copy: another thread may launch the same
    /// plan while this one has released the GIL.
    void launch(uint64_t stream, const py::tuple &bases) const {
      std::vector<DeviceArg> args = deviceArgs;
      for (const Pointer &p : pointers)
        args[p.slot].address = address(bases, p);
      py::gil_scoped_release release;
      launcher->kernel->launch(stream, deviceGrid, args);
    }

    /// Runs on the interpreter, each buffer with the bytes recorded for it.
    void run(const py::tuple &bases) const {
      std::vector<HostArg> args = hostArgs;
      for (const Pointer &p : pointers)
        args[p.slot].data = reinterpret_cast<void *>(address(bases, p));
      py::gil_scoped_release release;
      launcher->module->run(hostGrid, args);
    }

  private:
    struct Pointer {
      size_t slot;
      size_t source;
      int64_t offset;
    };

    static uint64_t address(const py::tuple &bases, const Pointer &p) {
      if (p.source >= bases.size())
        throw Error(ErrorKind::Argument,
                    "a prepared launch given " + std::to_string(bases.size()) + " bases");
      return PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(bases.ptr(), p.source)) +
             p.offset;
    }

    std::shared_ptr<OpLauncher> launcher;
    std::vector<Pointer> pointers;
    std::vector<DeviceArg> deviceArgs;
    std::vector<HostArg> hostArgs;
    std::array<uint32_t, 3> deviceGrid{};
    std::array<int64_t, 3> hostGrid{};
  };

  Prepared prepare(const py::tuple &grid, const py::dict &args, const py::dict &sources) {
    return Prepared(shared_from_this(), grid, args, sources);
  }

private:
  struct Slot {
    py::str name;
    bool pointer;
    bool isFloat;
    py::object dtypes;
  };

  /// Every argument from `args` into `out`: tensors (checked) by `setPointer`,
  /// numbers as their parameters take them.
  template <typename Arg, typename SetPointer>
  void pack(const py::dict &args, std::vector<Arg> &out, SetPointer setPointer) {
    checkCount(args);
    out.resize(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
      py::handle value = lookup(args, slots[i]);
      if (slots[i].pointer) {
        checkTensor(slots[i], value);
        setPointer(value, out[i]);
      } else {
        setNumber(slots[i], value, out[i]);
      }
    }
  }

  Error argumentError(const std::string &message) const {
    return Error(ErrorKind::Argument, "kernel '" + module->name() + "': " + message);
  }

  void checkCount(const py::dict &args) const {
    if (args.size() == slots.size())
      return;
    std::string names;
    for (const Slot &s : slots)
      names += (names.empty() ? "" : ", ") + std::string(s.name);
    throw argumentError("takes the arguments (" + names + "), got " +
                        std::to_string(args.size()));
  }

  py::handle lookup(const py::dict &args, const Slot &slot) const {
    PyObject *value = PyDict_GetItemWithError(args.ptr(), slot.name.ptr());
    if (!value) {
      if (PyErr_Occurred())
        throw py::error_already_set();
      throw argumentError("no argument '" + std::string(slot.name) + "'");
    }
    return value;
  }

  /// The tensor's dtype is one the parameter takes and it lives on the device.
  void checkTensor(const Slot &slot, py::handle value) const {
    PyObject *dtype = PyObject_GetAttr(value.ptr(), names().dtype);
    if (!dtype) {
      PyErr_Clear();
      throw argumentError(
          "argument '" + std::string(slot.name) + "' is a " +
          std::string(py::str(py::type::handle_of(value).attr("__name__"))) +
          ", expected a tensor");
    }
    bool known = false;
    for (py::handle d : slot.dtypes)
      known = known || d.ptr() == dtype;
    std::string got = py::str(py::handle(dtype));
    Py_DECREF(dtype);
    if (!known)
      throw argumentError("argument '" + std::string(slot.name) + "' is " + got +
                          ", the parameter takes " + std::string(py::str(slot.dtypes)));
    // get_device() is -1 for the CPU and for torch's other devices (meta).
    int64_t on = device < 0
                     ? (py::handle(value).attr(names().isCpu).cast<bool>() ? -1 : -2)
                     : callMethod(value, names().getDevice).cast<int64_t>();
    if (on != device)
      throw argumentError("argument '" + std::string(slot.name) + "' is on " +
                          deviceName(on) + ", the launch on " + deviceName(device));
  }

  /// A scalar as the parameter's kind, converted as float() or int() would.
  template <typename Arg>
  static void setNumber(const Slot &slot, py::handle value, Arg &arg) {
    if (slot.isFloat) {
      arg.kind = Arg::Kind::Float;
      arg.number = PyFloat_AsDouble(value.ptr());
      if (arg.number == -1.0 && PyErr_Occurred())
        throw py::error_already_set();
      return;
    }
    arg.kind = Arg::Kind::Int;
    arg.integer = py::int_(py::reinterpret_borrow<py::object>(value)).cast<int64_t>();
  }

  static std::string deviceName(int64_t ordinal) {
    return ordinal == -1   ? "the CPU"
           : ordinal == -2 ? "a device other than the CPU and CUDA"
                           : "cuda:" + std::to_string(ordinal);
  }

  template <typename T> static std::array<T, 3> gridOf(const py::tuple &grid) {
    if (grid.empty() || grid.size() > 3)
      throw Error(ErrorKind::Argument, "a grid of " + std::to_string(grid.size()) +
                                           " dimensions (expected 1 to 3)");
    std::array<T, 3> dims{1, 1, 1};
    for (size_t i = 0; i < grid.size(); ++i) {
      int64_t extent = grid[i].cast<int64_t>();
      if (extent < 0)
        throw Error(ErrorKind::Argument,
                    "a negative grid extent " + std::to_string(extent));
      dims[i] = T(extent);
    }
    return dims;
  }

  /// Bytes from the tensor's first element to one past its last.
  static size_t spanBytes(py::handle tensor) {
    if (callMethod(tensor, names().numel).cast<int64_t>() == 0)
      return 0;
    py::tuple shape = py::tuple(tensor.attr("shape"));
    py::tuple strides = callMethod(tensor, names().stride);
    int64_t last = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      last += (shape[d].cast<int64_t>() - 1) * strides[d].cast<int64_t>();
    return size_t(last + 1) * callMethod(tensor, names().elementSize).cast<size_t>();
  }

  std::shared_ptr<KernelModule> module;
  std::shared_ptr<DeviceKernel> kernel;
  int device;
  std::vector<Slot> slots;
  std::vector<DeviceArg> deviceArgs;
  std::vector<HostArg> hostArgs;
};
} // namespace

void bindLaunch(py::module_ &m) {
  py::class_<OpLauncher, std::shared_ptr<OpLauncher>>(
      m, "_OpLauncher", "tilejit.ops' launches of one kernel module on one device.")
      .def(py::init<std::shared_ptr<KernelModule>, std::shared_ptr<DeviceKernel>, int,
                    const py::list &>(),
           py::arg("module"), py::arg("kernel"), py::arg("device"), py::arg("dtypes"))
      .def("launch", &OpLauncher::launch, py::arg("stream"), py::arg("grid"),
           py::arg("args"),
           "Launches on `stream` (a CUstream as int) with the arguments by name.")
      .def("run", &OpLauncher::run, py::arg("grid"), py::arg("args"),
           "Runs on the interpreter with the arguments by name.")
      .def("prepare", &OpLauncher::prepare, py::arg("grid"), py::arg("args"),
           py::arg("sources"),
           "A launch of a cached plan: `args` packed now, each pointer parameter's "
           "address the base `sources[name][0]` a call passes plus `sources[name][1]` "
           "bytes.");
  py::class_<OpLauncher::Prepared>(m, "_PreparedLaunch",
                                   "One launch of a tilejit.ops plan, arguments packed.")
      .def("launch", &OpLauncher::Prepared::launch, py::arg("stream"), py::arg("bases"),
           "Launches on `stream` (a CUstream as int), the pointers from `bases`.")
      .def("run", &OpLauncher::Prepared::run, py::arg("bases"),
           "Runs on the interpreter, the pointers from `bases`.");
  m.def("_plan_projection", &planProjection, py::arg("runtime"), py::arg("rows"),
        py::arg("geometry"),
        "out_proj's constants for a projection of `rows` rows, tiled as the Mamba2 "
        "plans tile theirs for the runtime's arch and tuning database (None: the "
        "interpreter).");
}

} // namespace tilejit::python
