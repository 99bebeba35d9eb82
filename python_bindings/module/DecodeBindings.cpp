// The NemotronH decode step (Core.h DecodeStep) for tilejit/mamba2.py: raw
// contiguous buffers in and out; shapes, dtypes and torch live in Python.
#include "Bindings.h"

#include <pybind11/numpy.h>

namespace tilejit::python {

namespace {

/// The bytes of a C-contiguous buffer (numpy array); `writable` for outputs.
std::pair<void *, size_t> bytesOf(const py::buffer &b, bool writable) {
  py::buffer_info info = b.request(writable);
  ssize_t expected = info.itemsize;
  for (ssize_t i = info.ndim - 1; i >= 0; --i) {
    if (info.shape[i] > 1 && info.strides[i] != expected)
      throw Error(ErrorKind::Argument, "decode step: arrays must be C-contiguous");
    expected *= info.shape[i];
  }
  return {info.ptr, size_t(info.size * info.itemsize)};
}

} // namespace

void bindDecode(py::module_ &m) {
  py::class_<MambaGeometry>(m, "MambaGeometry",
                            "NemotronH geometry; the defaults are the full model's.")
      .def(py::init([] { return fullMambaGeometry(); }))
      .def_readwrite("hidden_size", &MambaGeometry::hiddenSize)
      .def_readwrite("num_heads", &MambaGeometry::numHeads)
      .def_readwrite("head_dim", &MambaGeometry::headDim)
      .def_readwrite("num_groups", &MambaGeometry::numGroups)
      .def_readwrite("state_size", &MambaGeometry::stateSize)
      .def_readwrite("conv_kernel", &MambaGeometry::convKernel)
      .def_readwrite("eps", &MambaGeometry::eps)
      .def_readwrite("dt_min", &MambaGeometry::dtMin)
      .def_readwrite("dt_max", &MambaGeometry::dtMax)
      .def_readwrite("layer_pattern", &MambaGeometry::layerPattern);

  py::class_<DecodeLayerInfo>(m, "DecodeLayerInfo")
      .def_readonly("layer", &DecodeLayerInfo::layer)
      .def_readonly("fp8", &DecodeLayerInfo::fp8)
      .def_readonly("in_weight_scale", &DecodeLayerInfo::inWeightScale)
      .def_readonly("in_input_scale", &DecodeLayerInfo::inInputScale)
      .def_readonly("out_weight_scale", &DecodeLayerInfo::outWeightScale)
      .def_readonly("out_input_scale", &DecodeLayerInfo::outInputScale);

  py::class_<DecodeStep, std::shared_ptr<DecodeStep>>(
      m, "_DecodeStep", "The C++ decode step behind tilejit.mamba2.DecodeStep.")
      .def_property_readonly("on_device", &DecodeStep::onDevice)
      .def_property_readonly("rows", &DecodeStep::rows)
      .def_property_readonly("num_slots", &DecodeStep::numSlots)
      .def_property_readonly("geometry", &DecodeStep::geometry)
      .def_property_readonly("layers", &DecodeStep::layers)
      .def_property_readonly("buffers", &DecodeStep::buffers)
      .def("weight",
           [](const DecodeStep &s, const std::string &name) {
             std::vector<uint8_t> bytes = s.weight(name);
             return py::array_t<uint8_t>(py::ssize_t(bytes.size()), bytes.data());
           })
      .def("read",
           [](DecodeStep &s, const std::string &name, py::buffer dst) {
             auto [ptr, bytes] = bytesOf(dst, true);
             s.read(name, ptr, bytes);
           })
      .def("write",
           [](DecodeStep &s, const std::string &name, py::buffer src) {
             auto [ptr, bytes] = bytesOf(src, false);
             s.write(name, ptr, bytes);
           })
      .def("step", [](DecodeStep &s, py::buffer hidden, py::array_t<int32_t> slots,
                      py::buffer out) {
        auto [h, hBytes] = bytesOf(hidden, false);
        auto [o, oBytes] = bytesOf(out, true);
        py::buffer_info si = slots.request();
        if (si.ndim != 1 || (si.shape[0] > 1 && si.strides[0] != 4))
          throw Error(ErrorKind::Argument, "decode step: slots must be a 1-D int32 array");
        py::gil_scoped_release release;
        s.step(h, hBytes, static_cast<const int32_t *>(si.ptr), size_t(si.shape[0]), o,
               oBytes);
      });

  m.def(
      "_decode_step",
      [](std::shared_ptr<Runtime> runtime, const MambaGeometry &geometry, int64_t layers,
         int64_t rows, int64_t slots, uint64_t seed) {
        DecodeStepOptions options{geometry, layers, rows, slots, seed};
        py::gil_scoped_release release;
        return runtime ? runtime->decodeStep(options) : createDecodeStep(options);
      },
      py::arg("runtime"), py::arg("geometry"), py::arg("layers"), py::arg("rows"),
      py::arg("slots"), py::arg("seed"),
      "The decode step on `runtime`'s GPU, or on the interpreter when it is None.");
}

} // namespace tilejit::python
