// The NemotronH decode step and plans (Mamba2.h) for tilejit/mamba2.py: arrays
// and tensors arrive described (type, shape, strides, device, address) and are
// checked against the plan in C++; torch lives in Python.
#include "Bindings.h"
#include "tilejit/python/Mamba2.h"
#include "tilejit/python/Runtime.h"

#include <pybind11/numpy.h>

namespace tilejit::python {

namespace {

/// (dtype name, shape, strides in elements, device or -1, address): the
/// description tilejit/mamba2.py makes of a numpy array or torch tensor.
TensorArg toTensorArg(const py::tuple &t) {
  if (t.size() != 5)
    throw Error(ErrorKind::Argument, "decode step: a tensor description has 5 fields");
  return {t[0].cast<std::string>(), t[1].cast<std::vector<int64_t>>(),
          t[2].cast<std::vector<int64_t>>(), t[3].cast<int>(), t[4].cast<uint64_t>()};
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
      .def("read", [](DecodeStep &s, const std::string &name,
                      const py::tuple &dst) { s.read(name, toTensorArg(dst)); })
      .def("write", [](DecodeStep &s, const std::string &name,
                       const py::tuple &src) { s.write(name, toTensorArg(src)); })
      .def("check", [](const DecodeStep &s, const std::string &name,
                       const py::tuple &src) { s.checkHost(name, toTensorArg(src)); })
      .def("device_address", &DecodeStep::deviceAddress)
      .def("step", [](DecodeStep &s, const py::tuple &hidden, std::vector<int32_t> slots,
                      const py::tuple &out, uint64_t stream) {
        TensorArg h = toTensorArg(hidden), o = toTensorArg(out);
        py::gil_scoped_release release;
        s.step(h, slots, o, stream);
      });

  m.def(
      "_decode_step",
      [](std::shared_ptr<Runtime> runtime, const MambaGeometry &geometry, int64_t layers,
         int64_t rows, int64_t slots, uint64_t seed, const std::string &ssmStateDtype,
         bool stochasticRounding) {
        DecodeStepOptions options{geometry, layers, rows, slots, seed};
        options.ssmStateDtype = ssmStateDtype;
        options.stochasticRounding = stochasticRounding;
        py::gil_scoped_release release;
        return createDecodeStep(options, runtime);
      },
      py::arg("runtime"), py::arg("geometry"), py::arg("layers"), py::arg("rows"),
      py::arg("slots"), py::arg("seed"), py::arg("ssm_state_dtype") = "f32",
      py::arg("stochastic_rounding") = false,
      "The decode step on `runtime`'s GPU, or on the interpreter when it is None.");

  m.def(
      "_describe_plan",
      [](std::shared_ptr<Runtime> runtime, const MambaGeometry &geometry, int64_t layers,
         int64_t rows, int64_t slots, uint64_t seed, const std::string &planArch,
         const std::vector<std::tuple<int64_t, int64_t, bool>> &prefill,
         const std::string &ssmStateDtype, bool stochasticRounding) {
        DecodeStepOptions options{geometry, layers, rows, slots, seed, planArch};
        options.ssmStateDtype = ssmStateDtype;
        options.stochasticRounding = stochasticRounding;
        std::vector<PrefillSequence> sequences;
        for (auto [tokens, slot, continued] : prefill)
          sequences.push_back({tokens, slot, continued});
        py::gil_scoped_release release;
        return describePlan(options, sequences, runtime);
      },
      py::arg("runtime"), py::arg("geometry"), py::arg("layers"), py::arg("rows"),
      py::arg("slots"), py::arg("seed"), py::arg("plan_arch"), py::arg("prefill"),
      py::arg("ssm_state_dtype") = "f32", py::arg("stochastic_rounding") = false,
      "The text of the plan a decode step (or, with `prefill` sequences, a prefill "
      "forward) runs on `runtime`, or on the interpreter when it is None.");
}

} // namespace tilejit::python
