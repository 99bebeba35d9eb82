// The `tilejit._tilejit` extension: exceptions, element types, caller locations;
// the builder and the modules are bound in their own files.
#include "Bindings.h"

#include <frameobject.h>

namespace tilejit::python {

namespace {
std::string packageDirectory;

/// A Python exception class per ErrorKind, all derived from tilejit.Error.
PyObject *errorClasses[5];

PyObject *newErrorClass(py::module_ &m, const char *name, PyObject *base,
                        const char *doc) {
  PyObject *cls = PyErr_NewExceptionWithDoc((std::string("tilejit.") + name).c_str(), doc,
                                            base, nullptr);
  if (!cls)
    throw py::error_already_set();
  m.attr(name) = py::handle(cls);
  return cls;
}
} // namespace

void setPackageDirectory(std::string directory) {
  packageDirectory = std::move(directory);
}

Location callerLocation() {
  Location loc;
  py::object frame =
      py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(PyEval_GetFrame()));
  while (frame) {
    auto *f = reinterpret_cast<PyFrameObject *>(frame.ptr());
    auto code = py::reinterpret_steal<py::object>(
        reinterpret_cast<PyObject *>(PyFrame_GetCode(f)));
    std::string file = py::str(code.attr("co_filename"));
    bool inPackage = !packageDirectory.empty() &&
                     file.compare(0, packageDirectory.size(), packageDirectory) == 0;
    if (!inPackage) {
      loc.file = file;
      loc.line = unsigned(PyFrame_GetLineNumber(f));
      int line, column, endLine, endColumn;
      // Columns are 0-based byte offsets in Python, 1-based in MLIR.
      if (PyCode_Addr2Location(reinterpret_cast<PyCodeObject *>(code.ptr()),
                               PyFrame_GetLasti(f), &line, &column, &endLine,
                               &endColumn) &&
          column >= 0)
        loc.column = unsigned(column) + 1;
      return loc;
    }
    frame = py::reinterpret_steal<py::object>(
        reinterpret_cast<PyObject *>(PyFrame_GetBack(f)));
  }
  loc.file = "<python>";
  return loc;
}

} // namespace tilejit::python

using namespace tilejit::python;
using tilejit::DType;

PYBIND11_MODULE(_tilejit, m) {
  m.doc() = "tilejit: write tile kernels in Python, compile them to PTX, run them on "
            "the CPU interpreter (numpy) or the GPU (torch).";
  // The package passes its folder: `__file__` is not set while this runs.
  m.def("_set_package_directory", &setPackageDirectory,
        "Frames of files in this folder are skipped when locating ops.");

  PyObject *base =
      newErrorClass(m, "Error", PyExc_RuntimeError,
                    "Every tilejit failure; the message carries the IR location.");
  errorClasses[int(ErrorKind::Build)] =
      newErrorClass(m, "BuildError", base, "A mistake in a kernel under construction.");
  errorClasses[int(ErrorKind::Compile)] =
      newErrorClass(m, "CompileError", base, "A kernel that does not lower or compile.");
  errorClasses[int(ErrorKind::Run)] = newErrorClass(
      m, "RunError", base, "A failure while the interpreter runs a kernel.");
  py::tuple argumentBases =
      py::make_tuple(py::handle(base), py::handle(PyExc_ValueError));
  errorClasses[int(ErrorKind::Argument)] =
      newErrorClass(m, "ArgumentError", argumentBases.ptr(),
                    "A bad argument: arch, constant, launch value.");
  errorClasses[int(ErrorKind::Device)] =
      newErrorClass(m, "DeviceError", base, "No GPU, or the driver reported a failure.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const Error &e) {
      PyErr_SetString(errorClasses[int(e.kind())], e.what());
    }
  });

  py::enum_<DType>(m, "dtype", "Element types of tiles, scalars and pointees.")
      .value("f32", DType::F32)
      .value("f16", DType::F16)
      .value("bf16", DType::BF16)
      .value("f8e4m3", DType::F8E4M3)
      .value("i1", DType::I1)
      .value("i8", DType::I8)
      .value("i32", DType::I32)
      .value("i64", DType::I64)
      .def_property_readonly("itemsize",
                             [](DType t) { return unsigned(tilejit::dtypeBytes(t)); });

  bindBuilder(m);
  bindModules(m);
  bindDecode(m);
  bindLaunch(m);
  bindOpSignature(m);
}
