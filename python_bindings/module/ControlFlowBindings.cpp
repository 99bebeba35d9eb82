// The builder's control flow in Python: for_range and if_then, whose bodies are
// Python functions called from inside the C++ builder, and the waits of
// programmatic dependent launch.
#include "Bindings.h"

namespace tilejit::python {

namespace {

/// Calls a Python body from inside the builder, whose frames must not unwind:
/// a Python exception is kept and raised again by rethrow() once the builder
/// call has returned, any other failure becomes a recorded mistake, and
/// either way the body yields nothing.
class BodyCall {
public:
  BodyCall(std::shared_ptr<KernelBuilder> builder, Location loc, std::string construct)
      : builder(std::move(builder)), loc(std::move(loc)),
        construct(std::move(construct)) {}

  template <typename Result, typename Body> Result call(Body &&body) {
    try {
      return body();
    } catch (py::error_already_set &e) {
      raised = std::move(e);
    } catch (const std::exception &e) {
      builder->fail(loc, "the " + construct + " body failed: " + e.what());
    }
    return Result();
  }

  /// Records the kept Python exception as a mistake and raises it again.
  void rethrow() {
    if (!raised)
      return;
    builder->fail(loc,
                  "the " + construct + " body raised " + std::string(raised->what()));
    throw std::move(*raised);
  }

private:
  std::shared_ptr<KernelBuilder> builder;
  Location loc;
  std::string construct;
  std::optional<py::error_already_set> raised;
};

std::vector<PyValue> forRange(py::handle lo, py::handle hi, py::handle step,
                              const std::vector<PyValue> &init,
                              const py::function &body) {
  auto b = kernelFor({lo, hi, step});
  Location loc = callerLocation();
  std::vector<ValueId> initIds;
  for (const PyValue &v : init)
    initIds.push_back(toOperand(b, py::cast(v), loc).value);
  BodyCall guard(b, loc, "loop");
  auto results =
      b->forRange(toOperand(b, lo, loc), toOperand(b, hi, loc), toOperand(b, step, loc),
                  initIds, [&](ValueId iv, std::vector<ValueId> carried) {
                    return guard.call<std::vector<ValueId>>([&] {
                      py::object out = body(PyValue{b, iv}, wrapAll(b, carried));
                      std::vector<ValueId> ids;
                      for (py::handle v : out.cast<py::sequence>())
                        ids.push_back(toOperand(b, v, loc).value);
                      return ids;
                    });
                  });
  guard.rethrow();
  return wrapAll(b, results);
}

void ifThen(py::handle cond, const py::function &body) {
  auto b = kernelFor({cond});
  Location loc = callerLocation();
  BodyCall guard(b, loc, "if_then");
  b->ifThen(toOperand(b, cond, loc), [&] { guard.call<void>([&] { body(); }); });
  guard.rethrow();
}

} // namespace

void bindControlFlow(py::module_ &m) {
  m.def("for_range", &forRange, py::arg("lo"), py::arg("hi"), py::arg("step"),
        py::arg("init"), py::arg("body"),
        "for iv in range(lo, hi, step), threading `init` through body(iv, carried) -> "
        "list; returns the final carried values.");
  m.def("if_then", &ifThen, py::arg("cond"), py::arg("body"),
        "Runs body() where the scalar i1 `cond` holds.");
  m.def(
      "wait_for_predecessors",
      [] { currentKernel()->waitForPredecessors(callerLocation()); },
      "Waits until the kernels before this one on the stream have ended (once, in "
      "the kernel's body); before it, only invariant parameters may be read.");
  m.def(
      "launch_dependents", [] { currentKernel()->launchDependents(callerLocation()); },
      "Lets the next kernel on the stream start its programs.");
}

} // namespace tilejit::python
