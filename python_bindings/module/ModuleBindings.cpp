// Finished kernels in Python: their IR and stages, interpreter runs on numpy
// arrays, the registry, the GPU runtime and its kernels, float conversions. Array
// arguments are checked and turned into addresses by tilejit/_arrays.py.
#include "Bindings.h"
#include "tilejit/python/KernelModule.h"
#include "tilejit/python/Runtime.h"

#include <pybind11/numpy.h>

namespace tilejit::python {

namespace {
/// The argument tuples of tilejit/_arrays.py as core arguments:
/// ("buffer", address, bytes, writable) / ("ptr", address) / int / float.
template <typename Arg> std::vector<Arg> toArgs(const py::list &args) {
  std::vector<Arg> out;
  for (py::handle a : args) {
    Arg arg;
    if (py::isinstance<py::tuple>(a)) {
      py::tuple t = a.cast<py::tuple>();
      if constexpr (std::is_same_v<Arg, HostArg>) {
        arg.kind = HostArg::Kind::Buffer;
        arg.data = reinterpret_cast<void *>(t[1].cast<uintptr_t>());
        arg.bytes = t[2].cast<size_t>();
        arg.writable = t[3].cast<bool>();
      } else {
        arg.kind = DeviceArg::Kind::Pointer;
        arg.address = t[1].cast<uint64_t>();
      }
    } else if (PyIndex_Check(a.ptr())) {
      arg.kind = Arg::Kind::Int;
      arg.integer = a.cast<int64_t>();
    } else {
      arg.kind = Arg::Kind::Float;
      arg.number = a.cast<double>();
    }
    out.push_back(arg);
  }
  return out;
}

/// Applies an element-wise conversion to a C-contiguous numpy array.
template <typename In, typename Out>
py::array_t<Out>
convertArray(py::array_t<In, py::array::c_style | py::array::forcecast> in,
             void (*convert)(const In *, Out *, size_t)) {
  py::array_t<Out> out(std::vector<py::ssize_t>(in.shape(), in.shape() + in.ndim()));
  convert(in.data(), out.mutable_data(), size_t(in.size()));
  return out;
}

/// Param, PTXResult and KernelModule: a finished kernel, its stages and runs.
void bindKernelModule(py::module_ &m) {
  py::class_<Param>(m, "Param", "A kernel parameter: a pointer to `dtype` or a scalar.")
      .def_readonly("name", &Param::name)
      .def_readonly("pointer", &Param::pointer)
      .def_readonly("dtype", &Param::type)
      .def_readonly("shape", &Param::shape,
                    "Pointers: the declared shape (sizes, names of the scalar parameters "
                    "holding sizes, '?' for any), [] when not declared")
      .def("__repr__", [](const Param &p) {
        return "Param(" + p.name + ": " + (p.pointer ? "ptr<" : "") + dtypeName(p.type) +
               (p.pointer ? ">" : "") + ")";
      });

  py::class_<PTXResult>(m, "PTXResult", "A kernel compiled to PTX, with every stage.")
      .def_readonly("entry", &PTXResult::entry)
      .def_readonly("ptx", &PTXResult::ptx)
      .def_readonly("threads", &PTXResult::threads)
      .def_readonly("shared_bytes", &PTXResult::sharedBytes)
      .def_readonly("sums", &PTXResult::sums,
                    "'reduced' (e4m3 wgmma: fewer bits than f32 inside one instruction, "
                    "R1h's band) or 'exact'")
      .def_readonly("params", &PTXResult::params)
      .def_property_readonly("stages",
                             [](const PTXResult &r) {
                               std::vector<std::pair<std::string, std::string>> out;
                               for (const Stage &s : r.stages)
                                 out.emplace_back(s.name, s.text);
                               return out;
                             })
      .def_property_readonly("timings_ms", [](const PTXResult &r) {
        return std::map<std::string, double>{{"lower", r.lowerMs},
                                             {"translate", r.translateMs},
                                             {"optimize", r.optimizeMs},
                                             {"codegen", r.codegenMs}};
      });

  py::class_<KernelModule, std::shared_ptr<KernelModule>>(
      m, "KernelModule", "A verified kernel: IR, stages, interpreter runs, GPU launches.")
      .def_property_readonly("name", &KernelModule::name)
      .def_property_readonly("params", &KernelModule::params)
      .def("tile_ir", &KernelModule::tileIR, py::arg("locations") = false,
           "The tile IR; with locations each op names the line that built it.")
      .def_property_readonly("canonical_ir", &KernelModule::canonicalIR)
      .def("compile", &KernelModule::compilePTX, py::arg("arch"),
           py::arg("opt_level") = 3, py::arg("stages") = true,
           py::call_guard<py::gil_scoped_release>(),
           "Lowers a copy for `arch`; `stages` keeps every stage's text.")
      .def(
          "_run",
          [](const KernelModule &k, std::array<int64_t, 3> grid, const py::list &args) {
            std::vector<HostArg> hostArgs = toArgs<HostArg>(args);
            py::gil_scoped_release release;
            k.run(grid, hostArgs);
          },
          "Runs on the interpreter with argument tuples from tilejit._arrays.");
}

/// The registered kernels and the codes of their device-side checks.
void bindRegistry(py::module_ &m) {
  py::class_<ConstantInfo>(m, "Constant",
                           "A compile-time constant of a registered kernel.")
      .def_readonly("name", &ConstantInfo::name)
      .def_readonly("default", &ConstantInfo::defaultValue)
      .def_readonly("help", &ConstantInfo::help);
  py::class_<RegisteredKernel>(m, "RegisteredKernelInfo")
      .def_readonly("name", &RegisteredKernel::name)
      .def_readonly("summary", &RegisteredKernel::summary)
      .def_readonly("constants", &RegisteredKernel::constants);
  m.def("registered_kernels", &registeredKernels, "Every registered kernel, by name.");
  m.def("op_error_codes", &opErrorCodes,
        "The codes of the registered kernels' device-side checks (OpError), by name.");
  m.def("build_registered", &buildRegistered, py::arg("name"),
        py::arg("constants") = std::map<std::string, int64_t>{},
        "Builds a registered kernel with its constants overridden.");
}

/// LoadStats, DeviceKernel and Runtime.
void bindRuntime(py::module_ &m) {
  py::class_<LoadStatistics>(m, "LoadStats", "The runtime's load statistics (counters).")
      .def_readonly("bytes_uploaded", &LoadStatistics::bytesUploaded)
      .def_readonly("modules_compiled", &LoadStatistics::modulesCompiled)
      .def_readonly("modules_loaded", &LoadStatistics::modulesLoaded)
      .def_readonly("memory_hits", &LoadStatistics::memoryHits)
      .def_readonly("disk_hits", &LoadStatistics::diskHits)
      .def_readonly("corrupt_entries", &LoadStatistics::corruptEntries)
      .def_readonly("bytes_to_device", &LoadStatistics::bytesToDevice,
                    "Bytes of every host -> device copy (weights, buffers, pages).")
      .def_readonly("bytes_to_host", &LoadStatistics::bytesToHost,
                    "Bytes of every device -> host copy.")
      .def_readonly("bytes_on_device", &LoadStatistics::bytesOnDevice,
                    "Bytes of every device -> device copy.")
      .def_readonly("compile_ms_by_stage", &LoadStatistics::compileMsByStage)
      .def("__str__", [](const LoadStatistics &s) { return s.text; });

  py::class_<DeviceKernel, std::shared_ptr<DeviceKernel>>(
      m, "DeviceKernel",
      "A kernel of a Runtime, compiled through its caches on first use.")
      .def_property_readonly("name", &DeviceKernel::name)
      .def("compile", &DeviceKernel::compile, py::call_guard<py::gil_scoped_release>())
      .def("prepare", &DeviceKernel::prepare, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("origin", &DeviceKernel::origin)
      .def_property_readonly("compile_ms", &DeviceKernel::compileMs)
      .def_property_readonly("disk_key", &DeviceKernel::diskKey)
      .def_property_readonly("ptx", &DeviceKernel::ptx)
      .def(
          "_launch",
          [](DeviceKernel &k, uint64_t stream, std::array<uint32_t, 3> grid,
             const py::list &args) {
            std::vector<DeviceArg> deviceArgs = toArgs<DeviceArg>(args);
            py::gil_scoped_release release;
            k.launch(stream, grid, deviceArgs);
          },
          "Launches on `stream` with argument tuples from tilejit._arrays.");

  py::class_<Runtime, std::shared_ptr<Runtime>>(m, "Runtime",
                                                "The JIT runtime of one device context.")
      .def(py::init([](const std::string &device, int ordinal, const std::string &arch,
                       const std::string &cacheDir, bool diskCache) {
             return Runtime::open({device, ordinal, arch, cacheDir, diskCache});
           }),
           py::arg("device") = "cuda", py::arg("ordinal") = 0, py::arg("arch") = "",
           py::arg("cache_dir") = "", py::arg("disk_cache") = true)
      .def_property_readonly("arch", &Runtime::arch)
      .def_property_readonly("ordinal", &Runtime::ordinal)
      .def_property_readonly("can_launch", &Runtime::canLaunch)
      .def("__repr__", [](const Runtime &r) { return "Runtime(" + r.describe() + ")"; })
      .def("stats", &Runtime::stats)
      .def("_kernel", &Runtime::kernel, py::arg("module"), py::arg("opt_level") = 3)
      .def("_synchronize", &Runtime::synchronizeStream, py::arg("stream"),
           py::call_guard<py::gil_scoped_release>(),
           "Waits until the work queued on `stream` (a CUstream as int) is done.");
}

/// Bit-exact conversions between float32 and bf16 or e4m3 bit patterns.
void bindConversions(py::module_ &m) {
  m.def(
      "f32_to_bf16",
      [](py::array_t<float, py::array::c_style | py::array::forcecast> a) {
        return convertArray<float, uint16_t>(a, &f32ToBF16);
      },
      "float32 array -> bf16 bit patterns (uint16), round to nearest even.");
  m.def("bf16_to_f32",
        [](py::array_t<uint16_t, py::array::c_style | py::array::forcecast> a) {
          return convertArray<uint16_t, float>(a, &bf16ToF32);
        });
  m.def(
      "f32_to_e4m3",
      [](py::array_t<float, py::array::c_style | py::array::forcecast> a) {
        return convertArray<float, uint8_t>(a, &f32ToE4M3);
      },
      "float32 array -> e4m3fn bit patterns (uint8), saturating to +-448.");
  m.def("e4m3_to_f32",
        [](py::array_t<uint8_t, py::array::c_style | py::array::forcecast> a) {
          return convertArray<uint8_t, float>(a, &e4m3ToF32);
        });
}

} // namespace

void bindModules(py::module_ &m) {
  bindKernelModule(m);
  bindRegistry(m);
  bindRuntime(m);
  bindConversions(m);
}

} // namespace tilejit::python
