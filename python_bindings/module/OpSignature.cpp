// tilejit.ops' plan cache key: one call turns an op's arguments into the bytes
// that name everything its checks and its kernel choice depend on besides the
// tensors' values, and the tensors' data pointers the cached plan launches with.
#include "Bindings.h"

#include <cstring>

namespace tilejit::python {

namespace {
/// The types the key reads, set once by tilejit.ops, and the dtypes it has seen.
struct SignatureTypes {
  PyObject *tensorType = nullptr;
  PyObject *dtypeType = nullptr;
  /// Every torch dtype seen so far, its index its code in the key, and its size
  /// in bytes (0 until a tensor of it is seen).
  std::vector<std::pair<PyObject *, int64_t>> dtypes;
};
SignatureTypes &types() {
  static SignatureTypes *state = new SignatureTypes();
  return *state;
}

enum Tag : char {
  None = 'n',
  False = 'f',
  True = 't',
  Int = 'i',
  Float = 'd',
  Str = 's',
  Dtype = 'y',
  Tensor = 'T',
  Tuple = 'u',
  List = 'l',
  Keyword = 'k',
  Overlap = 'o'
};

/// Why a value cannot be keyed: the call takes the op's full path, uncached.
struct Uncacheable {};

PyObject *check(PyObject *result) {
  if (!result)
    throw Uncacheable();
  return result;
}

/// A tensor's memory as the overlap part of the key compares it.
struct Extent {
  int64_t device;
  uint64_t address;
  uint64_t bytes;
};

class KeyWriter {
public:
  void raw(const void *data, size_t size) {
    key.append(static_cast<const char *>(data), size);
  }
  template <typename T> void put(T value) { raw(&value, sizeof(value)); }

  void value(PyObject *v) {
    if (v == Py_None)
      return put(Tag::None);
    if (PyBool_Check(v))
      return put(v == Py_True ? Tag::True : Tag::False);
    if (PyLong_CheckExact(v)) {
      int overflow = 0;
      long long number = PyLong_AsLongLongAndOverflow(v, &overflow);
      if (overflow)
        throw Uncacheable();
      put(Tag::Int);
      return put(int64_t(number));
    }
    if (PyFloat_CheckExact(v)) {
      put(Tag::Float);
      return put(PyFloat_AS_DOUBLE(v));
    }
    if (PyUnicode_CheckExact(v))
      return string(Tag::Str, v);
    if (Py_TYPE(v) == reinterpret_cast<PyTypeObject *>(types().dtypeType)) {
      put(Tag::Dtype);
      return put(uint8_t(dtypeCode(v)));
    }
    if (PyObject_TypeCheck(v, reinterpret_cast<PyTypeObject *>(types().tensorType)))
      return tensor(v);
    if (PyTuple_CheckExact(v) || PyList_CheckExact(v))
      return sequence(v);
    throw Uncacheable();
  }

  /// A tuple or list of plain values (dt_limit=(0.0, inf)); one holding a
  /// tensor is not keyed, the plan replaying only the call's own tensors.
  void sequence(PyObject *v) {
    bool tuple = PyTuple_CheckExact(v);
    Py_ssize_t size = tuple ? PyTuple_GET_SIZE(v) : PyList_GET_SIZE(v);
    put(tuple ? Tag::Tuple : Tag::List);
    put(uint32_t(size));
    size_t tensors = addresses.size();
    for (Py_ssize_t i = 0; i < size; ++i)
      value(tuple ? PyTuple_GET_ITEM(v, i) : PyList_GET_ITEM(v, i));
    if (addresses.size() != tensors)
      throw Uncacheable();
  }

  void string(Tag tag, PyObject *v) {
    Py_ssize_t size = 0;
    const char *text = PyUnicode_AsUTF8AndSize(v, &size);
    if (!text)
      throw Uncacheable();
    put(tag);
    put(uint32_t(size));
    raw(text, size_t(size));
  }

  /// dtype, device, shape, strides and the address modulo 16 (the ops' alignment
  /// checks and vector widths depend on it).
  void tensor(PyObject *t) {
    SignatureTypes &s = types();
    const TensorAttributes &a = tensorAttributes();
    py::object dtype = steal(PyObject_GetAttr(t, a.dtype));
    size_t code = dtypeCode(dtype.ptr());
    if (s.dtypes[code].second == 0)
      s.dtypes[code].second = integer(call(t, a.elementSize));
    int64_t device = integer(call(t, a.getDevice));
    if (!PyObject_IsTrue(
            steal(PyObject_GetAttr(t, device < 0 ? a.isCpu : a.isCuda)).ptr()))
      throw Uncacheable(); // meta and other devices: the full path says what it takes
    py::object shape = steal(PyObject_GetAttr(t, a.shape));
    py::object stride = call(t, a.stride);
    if (!PyTuple_Check(shape.ptr()) || !PyTuple_Check(stride.ptr()) ||
        PyTuple_GET_SIZE(shape.ptr()) != PyTuple_GET_SIZE(stride.ptr()))
      throw Uncacheable();
    auto address = uint64_t(integer(call(t, a.dataPtr)));
    Py_ssize_t rank = PyTuple_GET_SIZE(shape.ptr());
    put(Tag::Tensor);
    put(uint8_t(code));
    put(int16_t(device));
    put(uint8_t(rank));
    put(uint8_t(address % 16));
    int64_t last = 0;
    bool empty = false;
    for (Py_ssize_t d = 0; d < rank; ++d) {
      int64_t size = integer(PyTuple_GET_ITEM(shape.ptr(), d));
      int64_t step = integer(PyTuple_GET_ITEM(stride.ptr(), d));
      put(size);
      put(step);
      empty = empty || size == 0;
      last += (size - 1) * step;
    }
    addresses.push_back(address);
    uint64_t bytes = empty ? 0 : uint64_t(last + 1) * uint64_t(s.dtypes[code].second);
    extents.push_back({device, address, bytes});
  }

  /// Which tensors share memory, and how far apart they start: every decision
  /// the full path made about overlaps (refused outputs, views of one buffer)
  /// holds again for a call with the same key.
  void overlaps() {
    for (size_t i = 0; i < extents.size(); ++i)
      for (size_t j = i + 1; j < extents.size(); ++j) {
        const Extent &a = extents[i], &b = extents[j];
        if (a.device != b.device || !a.bytes || !b.bytes ||
            !(a.address < b.address + b.bytes && b.address < a.address + a.bytes))
          continue;
        put(Tag::Overlap);
        put(uint16_t(i));
        put(uint16_t(j));
        put(int64_t(b.address - a.address));
      }
  }

  std::string key;
  std::vector<uint64_t> addresses;

private:
  static py::object steal(PyObject *result) {
    return py::reinterpret_steal<py::object>(check(result));
  }
  static py::object call(PyObject *object, PyObject *name) {
    return steal(PyObject_CallMethodObjArgs(object, name, nullptr));
  }
  static int64_t integer(py::handle v) { return integer(v.ptr()); }
  static int64_t integer(PyObject *v) {
    long long value = PyLong_AsLongLong(v);
    if (value == -1 && PyErr_Occurred())
      throw Uncacheable();
    return value;
  }
  static size_t dtypeCode(PyObject *dtype) {
    std::vector<std::pair<PyObject *, int64_t>> &known = types().dtypes;
    for (size_t i = 0; i < known.size(); ++i)
      if (known[i].first == dtype)
        return i;
    if (known.size() == 255)
      throw Uncacheable();
    Py_INCREF(dtype); // torch's dtypes live as long as torch; the table keeps them
    known.push_back({dtype, 0});
    return known.size() - 1;
  }

  std::vector<Extent> extents;
};

/// (key bytes, tuple of the tensors' data pointers in argument order), or None
/// when an argument is not a tensor, None, bool, int, float, str, dtype or a
/// tuple or list of those but tensors.
py::object opSignature(const py::tuple &args, const py::dict &kwargs) {
  if (!types().tensorType)
    throw Error(ErrorKind::Argument, "_op_signature before _set_signature_types");
  KeyWriter writer;
  try {
    for (py::handle v : args)
      writer.value(v.ptr());
    for (auto item : kwargs) {
      if (!PyUnicode_CheckExact(item.first.ptr()))
        return py::none();
      writer.string(Tag::Keyword, item.first.ptr());
      writer.value(item.second.ptr());
    }
    writer.overlaps();
  } catch (const Uncacheable &) {
    PyErr_Clear();
    return py::none();
  }
  py::tuple addresses(writer.addresses.size());
  for (size_t i = 0; i < writer.addresses.size(); ++i)
    addresses[i] = py::int_(writer.addresses[i]);
  return py::make_tuple(py::bytes(writer.key), addresses);
}
} // namespace

void bindOpSignature(py::module_ &m) {
  m.def(
      "_set_signature_types",
      [](py::object tensorType, py::object dtypeType) {
        types().tensorType = tensorType.release().ptr();
        types().dtypeType = dtypeType.release().ptr();
      },
      py::arg("tensor_type"), py::arg("dtype_type"),
      "torch.Tensor and torch.dtype, the types _op_signature keys by their metadata.");
  m.def("_op_signature", &opSignature, py::arg("args"), py::arg("kwargs"),
        "tilejit.ops' plan key of a call's arguments and its tensors' data pointers, "
        "or None when an argument cannot be keyed.");
}

} // namespace tilejit::python
