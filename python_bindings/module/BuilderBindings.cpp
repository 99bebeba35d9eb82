// The builder in Python: Kernel, Value with operators, and the free functions of
// tilejit/Builder/Builder.h under snake_case names (control flow in
// ControlFlowBindings.cpp). Every op is located at the user's Python line.
#include "Bindings.h"
#include "tilejit/python/KernelModule.h"

namespace tilejit::python {

namespace {
thread_local std::weak_ptr<KernelBuilder> threadKernel;

PyValue wrap(const std::shared_ptr<KernelBuilder> &b, ValueId id) { return {b, id}; }

std::optional<Operand> optionalOperand(const std::shared_ptr<KernelBuilder> &b,
                                       py::handle x, const Location &loc) {
  if (x.is_none())
    return std::nullopt;
  return toOperand(b, x, loc);
}

std::vector<Operand> toOperands(const std::shared_ptr<KernelBuilder> &b,
                                py::handle sequence, const Location &loc) {
  std::vector<Operand> out;
  for (py::handle x : sequence.cast<py::sequence>())
    out.push_back(toOperand(b, x, loc));
  return out;
}

std::vector<ViewDim> toDims(const std::shared_ptr<KernelBuilder> &b,
                            const py::sequence &dims) {
  std::vector<ViewDim> out;
  for (py::handle d : dims) {
    ViewDim dim;
    if (py::isinstance<PyValue>(d))
      dim.value = toOperand(b, d, {}).value;
    else
      dim.fixed = d.cast<int64_t>();
    out.push_back(dim);
  }
  return out;
}

PyValue unaryFn(UnaryOp op, py::handle x) {
  auto b = kernelFor({x});
  return wrap(b, b->unary(op, toOperand(b, x, callerLocation())));
}

PyValue binaryFn(BinaryOp op, py::handle x, py::handle y) {
  auto b = kernelFor({x, y});
  Location loc = callerLocation();
  return wrap(b, b->binary(op, toOperand(b, x, loc), toOperand(b, y, loc)));
}

PyValue reduceFn(ReduceOp op, py::handle x, int axis) {
  auto b = kernelFor({x});
  return wrap(b, b->reduce(op, toOperand(b, x, callerLocation()), axis));
}

/// Binds `name` and its reflected form (`__radd__`: the number on the left).
void bindOperator(py::class_<PyValue> &cls, const char *name, const char *reflected,
                  BinaryOp op) {
  cls.def(
      name, [op](py::handle self, py::handle other) { return binaryFn(op, self, other); },
      py::is_operator());
  if (reflected)
    cls.def(
        reflected,
        [op](py::handle self, py::handle other) { return binaryFn(op, other, self); },
        py::is_operator());
}
} // namespace

std::shared_ptr<KernelBuilder> currentKernel() {
  std::shared_ptr<KernelBuilder> b = threadKernel.lock();
  if (!b || b->finished())
    throw Error(ErrorKind::Build, "no kernel is being built on this thread: create a "
                                  "tilejit.Kernel first");
  return b;
}

void setCurrentKernel(const std::shared_ptr<KernelBuilder> &b) { threadKernel = b; }

std::vector<PyValue> wrapAll(const std::shared_ptr<KernelBuilder> &b,
                             const std::vector<ValueId> &ids) {
  std::vector<PyValue> out;
  for (ValueId id : ids)
    out.push_back({b, id});
  return out;
}

std::shared_ptr<KernelBuilder> kernelFor(std::initializer_list<py::handle> values) {
  for (py::handle v : values)
    if (py::isinstance<PyValue>(v))
      return v.cast<PyValue &>().builder;
  return currentKernel();
}

Operand toOperand(const std::shared_ptr<KernelBuilder> &b, py::handle x,
                  const Location &loc) {
  Operand op;
  op.loc = loc;
  if (py::isinstance<PyValue>(x)) {
    const PyValue &v = x.cast<const PyValue &>();
    if (v.builder != b)
      throw Error(ErrorKind::Build, "a value of kernel '" + v.builder->name() +
                                        "' used in kernel '" + b->name() + "'");
    op.kind = Operand::Kind::Value;
    op.value = v.id;
  } else if (PyIndex_Check(x.ptr())) {
    op.kind = Operand::Kind::Int;
    op.integer = x.cast<int64_t>();
  } else if (PyFloat_Check(x.ptr()) || py::hasattr(x, "__float__")) {
    op.kind = Operand::Kind::Float;
    op.number = x.cast<double>();
  } else {
    throw py::type_error("expected a tilejit Value or a number, got " +
                         std::string(py::str(py::type::handle_of(x).attr("__name__"))));
  }
  return op;
}

namespace {
/// tilejit.Kernel: a kernel under construction, its parameters and config.
void bindKernel(py::module_ &m) {
  py::class_<KernelBuilder, std::shared_ptr<KernelBuilder>>(
      m, "Kernel", "A kernel under construction (one per thread at a time).")
      .def(py::init([](const std::string &name) {
             auto b = std::make_shared<KernelBuilder>(name, callerLocation());
             setCurrentKernel(b);
             return b;
           }),
           py::arg("name"))
      .def_property_readonly("name", &KernelBuilder::name)
      .def(
          "ptr_param",
          [](const std::shared_ptr<KernelBuilder> &b, const std::string &name, DType t) {
            return wrap(b, b->ptrParam(name, t, callerLocation()));
          },
          py::arg("name"), py::arg("pointee"),
          "A pointer parameter to elements of `pointee`.")
      .def(
          "scalar_param",
          [](const std::shared_ptr<KernelBuilder> &b, const std::string &name, DType t) {
            return wrap(b, b->scalarParam(name, t, callerLocation()));
          },
          py::arg("name"), py::arg("dtype"))
      .def(
          "set_config",
          [](KernelBuilder &b, std::vector<int64_t> tile, int64_t warps, int64_t stages,
             int64_t vector, int64_t splitK) {
            b.setConfig({std::move(tile), warps, stages, vector, splitK});
          },
          py::arg("tile"), py::arg("warps") = 4, py::arg("stages") = 1,
          py::arg("vector") = 1, py::arg("split_k") = 1,
          "Records `#tile.config` on the kernel.")
      .def(
          "mark_invariant",
          [](const std::shared_ptr<KernelBuilder> &b, py::handle param) {
            Location loc = callerLocation();
            b->markInvariant(toOperand(b, param, loc).value, loc);
          },
          py::arg("param"),
          "Marks a pointer parameter as memory no kernel writes (weights): it may be "
          "read before wait_for_predecessors().")
      .def("finish", &KernelBuilder::finish,
           "Verifies the kernel; a BuildError lists every mistake with its line.");
}

/// tilejit.Value with Python's operators.
void bindValue(py::module_ &m) {
  py::class_<PyValue> value(m, "Value", "A scalar, tile, pointer or view of a kernel.");
  value
      .def_property_readonly("valid",
                             [](const PyValue &v) { return v.builder->valid(v.id); })
      .def_property_readonly("shape",
                             [](const PyValue &v) {
                               std::vector<int64_t> s = v.builder->shape(v.id);
                               py::tuple t(s.size());
                               for (size_t i = 0; i < s.size(); ++i)
                                 t[i] = s[i];
                               return t;
                             })
      .def_property_readonly("dtype",
                             [](const PyValue &v) { return v.builder->dtype(v.id); })
      .def_property_readonly("is_tile",
                             [](const PyValue &v) { return v.builder->isTile(v.id); })
      .def_property_readonly("is_pointer",
                             [](const PyValue &v) { return v.builder->isPointer(v.id); })
      .def_property_readonly("is_view",
                             [](const PyValue &v) { return v.builder->isView(v.id); })
      .def("to",
           [](const PyValue &v, DType t) {
             return wrap(v.builder, v.builder->convert(v.id, t, callerLocation()));
           })
      .def("__repr__",
           [](const PyValue &v) { return "Value(" + v.builder->describe(v.id) + ")"; })
      .def("__neg__", [](py::handle v) { return unaryFn(UnaryOp::Neg, v); })
      .def("__bool__", [](const PyValue &) -> bool {
        throw py::type_error("a tilejit Value has no truth value at build time: use "
                             "where(), if_then() or a mask");
      });
  value.attr("__hash__") = py::none();
  bindOperator(value, "__add__", "__radd__", BinaryOp::Add);
  bindOperator(value, "__sub__", "__rsub__", BinaryOp::Sub);
  bindOperator(value, "__mul__", "__rmul__", BinaryOp::Mul);
  bindOperator(value, "__truediv__", "__rtruediv__", BinaryOp::Div);
  bindOperator(value, "__mod__", "__rmod__", BinaryOp::Rem);
  bindOperator(value, "__and__", "__rand__", BinaryOp::And);
  bindOperator(value, "__or__", "__ror__", BinaryOp::Or);
  bindOperator(value, "__xor__", "__rxor__", BinaryOp::Xor);
  bindOperator(value, "__lshift__", "__rlshift__", BinaryOp::Shl);
  bindOperator(value, "__lt__", nullptr, BinaryOp::Lt);
  bindOperator(value, "__le__", nullptr, BinaryOp::Le);
  bindOperator(value, "__gt__", nullptr, BinaryOp::Gt);
  bindOperator(value, "__ge__", nullptr, BinaryOp::Ge);
  bindOperator(value, "__eq__", nullptr, BinaryOp::Eq);
  bindOperator(value, "__ne__", nullptr, BinaryOp::Ne);
}

/// The ops that make values from nothing, or reshape one.
void bindShapeOps(py::module_ &m) {
  m.def("program_id", [](int axis) {
    auto b = currentKernel();
    return wrap(b, b->programId(axis, callerLocation()));
  });
  m.def("num_programs", [](int axis) {
    auto b = currentKernel();
    return wrap(b, b->numPrograms(axis, callerLocation()));
  });
  m.def("arange", [](int start, int end) {
    auto b = currentKernel();
    return wrap(b, b->arange(start, end, callerLocation()));
  });
  m.def("constant", [](double v, DType t) {
    auto b = currentKernel();
    return wrap(b, b->constant(v, t, callerLocation()));
  });
  m.def("full", [](std::vector<int64_t> shape, py::handle v, DType t) {
    auto b = kernelFor({v});
    return wrap(b, b->full(shape, toOperand(b, v, callerLocation()), t));
  });
  m.def("zeros", [](std::vector<int64_t> shape, DType t) {
    auto b = currentKernel();
    return wrap(b, b->zeros(shape, t, callerLocation()));
  });
  m.def("broadcast_to", [](py::handle x, std::vector<int64_t> shape) {
    auto b = kernelFor({x});
    return wrap(b, b->broadcastTo(toOperand(b, x, callerLocation()), shape));
  });
  m.def("expand_dims", [](py::handle x, int axis) {
    auto b = kernelFor({x});
    return wrap(b, b->expandDims(toOperand(b, x, callerLocation()), axis));
  });
  m.def("reshape", [](py::handle x, std::vector<int64_t> shape) {
    auto b = kernelFor({x});
    return wrap(b, b->reshape(toOperand(b, x, callerLocation()), shape));
  });
  m.def("transpose", [](py::handle x, std::vector<int32_t> order) {
    auto b = kernelFor({x});
    return wrap(b, b->transpose(toOperand(b, x, callerLocation()), order));
  });
}

/// Elementwise math, reductions and dot.
void bindMathOps(py::module_ &m) {
  m.def("maximum",
        [](py::handle a, py::handle c) { return binaryFn(BinaryOp::Maximum, a, c); });
  m.def("minimum",
        [](py::handle a, py::handle c) { return binaryFn(BinaryOp::Minimum, a, c); });
  // Logical, as the C++ builder's shr: Python's >> on a negative int is
  // arithmetic, so the operator is not bound.
  m.def("shr", [](py::handle a, py::handle c) { return binaryFn(BinaryOp::Shr, a, c); });
  m.def("bitcast", [](py::handle x, DType t) {
    auto b = kernelFor({x});
    return wrap(b, b->bitcast(toOperand(b, x, callerLocation()), t));
  });
  m.def("where", [](py::handle cond, py::handle a, py::handle c) {
    auto b = kernelFor({cond, a, c});
    Location loc = callerLocation();
    return wrap(
        b, b->where(toOperand(b, cond, loc), toOperand(b, a, loc), toOperand(b, c, loc)));
  });
  m.def(
      "fma",
      [](py::handle a, py::handle x, py::handle c) {
        auto b = kernelFor({a, x, c});
        Location loc = callerLocation();
        return wrap(
            b, b->fma(toOperand(b, a, loc), toOperand(b, x, loc), toOperand(b, c, loc)));
      },
      "a * x + c rounded once.");
  for (auto [name, op] : {std::pair{"exp", UnaryOp::Exp},
                          {"log", UnaryOp::Log},
                          {"log1p", UnaryOp::Log1p},
                          {"sqrt", UnaryOp::Sqrt},
                          {"rsqrt", UnaryOp::Rsqrt},
                          {"abs", UnaryOp::Abs},
                          {"silu", UnaryOp::Silu},
                          {"softplus", UnaryOp::Softplus}})
    m.def(name, [op = op](py::handle x) { return unaryFn(op, x); });
  for (auto [name, op] : {std::pair{"sum", ReduceOp::Sum},
                          {"max", ReduceOp::Max},
                          {"min", ReduceOp::Min},
                          {"cumsum", ReduceOp::Cumsum}})
    m.def(
        name, [op = op](py::handle x, int axis) { return reduceFn(op, x, axis); },
        py::arg("x"), py::arg("axis"));
  m.def(
      "dot",
      [](py::handle a, py::handle c, py::handle acc) {
        auto b = kernelFor({a, c, acc});
        Location loc = callerLocation();
        return wrap(b, b->dot(toOperand(b, a, loc), toOperand(b, c, loc),
                              toOperand(b, acc, loc)));
      },
      "acc + a @ b with f32 accumulation (a: MxK, b: KxN).");
}

/// Views, loads, stores and prefetches.
void bindMemoryOps(py::module_ &m) {
  m.def(
      "make_view",
      [](py::handle ptr, py::sequence sizes, py::sequence strides) {
        auto b = kernelFor({ptr});
        return wrap(b, b->makeView(toOperand(b, ptr, callerLocation()), toDims(b, sizes),
                                   toDims(b, strides)));
      },
      py::arg("ptr"), py::arg("sizes"), py::arg("strides"));
  m.def(
      "load",
      [](py::handle src, py::object second, py::object third, py::object padding) {
        auto b = kernelFor({src});
        Location loc = callerLocation();
        Operand ptr = toOperand(b, src, loc);
        if (ptr.kind == Operand::Kind::Value && b->isView(ptr.value)) {
          std::vector<Operand> offsets = toOperands(b, second, loc);
          std::optional<double> pad;
          if (!padding.is_none())
            pad = padding.cast<double>();
          return wrap(b, b->loadView(ptr.value, offsets,
                                     third.cast<std::vector<int64_t>>(), pad, loc));
        }
        return wrap(b, b->load(ptr, optionalOperand(b, second, loc),
                               optionalOperand(b, third, loc)));
      },
      py::arg("src"), py::arg("mask_or_offsets") = py::none(),
      py::arg("other_or_shape") = py::none(), py::arg("padding") = py::none(),
      "load(view, offsets, shape, padding=None) or load(ptrs, mask=None, other=None).");
  m.def(
      "store",
      [](py::handle dst, py::handle second, py::object third) {
        auto b = kernelFor({dst});
        Location loc = callerLocation();
        Operand ptr = toOperand(b, dst, loc);
        if (ptr.kind == Operand::Kind::Value && b->isView(ptr.value)) {
          std::vector<Operand> offsets = toOperands(b, second, loc);
          b->storeView(ptr.value, offsets, toOperand(b, third, loc), loc);
          return;
        }
        b->store(ptr, toOperand(b, second, loc), optionalOperand(b, third, loc));
      },
      py::arg("dst"), py::arg("value_or_offsets"), py::arg("mask_or_value") = py::none(),
      "store(view, offsets, value) or store(ptrs, value, mask=None).");
  m.def(
      "prefetch_l2",
      [](py::handle ptr, py::handle bytes) {
        auto b = kernelFor({ptr, bytes});
        Location loc = callerLocation();
        b->prefetchL2(toOperand(b, ptr, loc), toOperand(b, bytes, loc));
      },
      py::arg("ptr"), py::arg("bytes"),
      "Starts `bytes` bytes at the scalar pointer `ptr` on their way into L2.");
}

} // namespace

void bindBuilder(py::module_ &m) {
  bindKernel(m);
  bindValue(m);
  bindShapeOps(m);
  bindMathOps(m);
  bindMemoryOps(m);
  bindControlFlow(m);
}

} // namespace tilejit::python
