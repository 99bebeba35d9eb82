// Shared by the pybind11 module's files: how Python callers become core Locations
// and Operands, and the binding function of each part. Includes only the core's
// headers, pybind11 and Python.
#ifndef TILEJIT_PYTHON_MODULE_BINDINGS_H
#define TILEJIT_PYTHON_MODULE_BINDINGS_H

#include "tilejit/python/KernelBuilder.h"

// pybind11 shares its internals (type registry, exception translators) between
// the modules of a process by a name that holds its layout version, not its
// release: torch's pybind11 of another release would read ours, made first when
// tilejit is imported first, in a layout it does not know. tilejit passes no
// pybind11 object across to another module, so it keeps its own.
// (tests/e2e/python_import_order.sh defines TILEJIT_SHARE_PYBIND11_INTERNALS to
// build the shared variant.)
#ifndef TILEJIT_SHARE_PYBIND11_INTERNALS
#define PYBIND11_COMPILER_TYPE "_tilejit"
#endif
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace tilejit::python {

namespace py = pybind11;

/// The innermost Python frame outside the tilejit package: the user's line
/// that the ops of a builder call are located at.
Location callerLocation();
/// Sets the package folder whose frames callerLocation skips.
void setPackageDirectory(std::string directory);

/// A Value of Python: one value of a kernel under construction.
struct PyValue {
  std::shared_ptr<KernelBuilder> builder;
  ValueId id;
};

/// The thread's kernel under construction; a BuildError when there is none.
std::shared_ptr<KernelBuilder> currentKernel();
/// Makes `builder` the thread's kernel for the free functions.
void setCurrentKernel(const std::shared_ptr<KernelBuilder> &builder);

/// A Value, an int or a float as an Operand of `builder` located at `loc`.
/// TypeError for anything else, BuildError for a value of another kernel.
Operand toOperand(const std::shared_ptr<KernelBuilder> &builder, py::handle x,
                  const Location &loc);
/// The kernel that `values` belong to (the first Value among them), else the
/// thread's current kernel.
std::shared_ptr<KernelBuilder> kernelFor(std::initializer_list<py::handle> values);
/// `ids` of `builder` as Values.
std::vector<PyValue> wrapAll(const std::shared_ptr<KernelBuilder> &builder,
                             const std::vector<ValueId> &ids);

/// The tensor attribute names tilejit.ops' launch path and plan key read,
/// interned once (under the GIL, at first use) and never released: they outlive
/// the module (LaunchBindings.cpp).
struct TensorAttributes {
  PyObject *dataPtr = PyUnicode_InternFromString("data_ptr");
  PyObject *dtype = PyUnicode_InternFromString("dtype");
  PyObject *elementSize = PyUnicode_InternFromString("element_size");
  PyObject *getDevice = PyUnicode_InternFromString("get_device");
  PyObject *isCpu = PyUnicode_InternFromString("is_cpu");
  PyObject *isCuda = PyUnicode_InternFromString("is_cuda");
  PyObject *numel = PyUnicode_InternFromString("numel");
  PyObject *shape = PyUnicode_InternFromString("shape");
  PyObject *stride = PyUnicode_InternFromString("stride");
};
const TensorAttributes &tensorAttributes();

/// Kernel, Value and the builder's free functions (BuilderBindings.cpp), its
/// control flow among them (ControlFlowBindings.cpp).
void bindBuilder(py::module_ &m);
void bindControlFlow(py::module_ &m);
/// KernelModule, the registry, the runtime and the conversions.
void bindModules(py::module_ &m);
/// tilejit.mamba2's decode step and plans.
void bindDecode(py::module_ &m);
/// tilejit.ops' launcher (LaunchBindings.cpp).
void bindLaunch(py::module_ &m);
/// tilejit.ops' plan cache key (OpSignature.cpp).
void bindOpSignature(py::module_ &m);

} // namespace tilejit::python

#endif // TILEJIT_PYTHON_MODULE_BINDINGS_H
