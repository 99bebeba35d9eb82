// The safetensors format: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}}, then the data. Every range is checked
// against the file before a tensor is handed out; large files are memory-mapped.
#include "tilejit/models/nemotron_h/NemotronH.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <bit>
#include <cstring>

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and read by copying");

namespace tilejit::models {
namespace {

/// Bytes per element of a safetensors dtype, 0 when unknown (such tensors
/// are range-checked but their size is not).
uint64_t elementBytes(llvm::StringRef dtype) {
  return llvm::StringSwitch<uint64_t>(dtype)
      .Cases({"F8_E4M3", "F8_E5M2", "I8", "U8", "BOOL"}, 1)
      .Cases({"BF16", "F16", "I16", "U16"}, 2)
      .Cases({"F32", "I32", "U32"}, 4)
      .Cases({"F64", "I64", "U64"}, 8)
      .Default(0);
}

/// A JSON array of non-negative integers.
std::optional<std::vector<int64_t>> integersOf(const llvm::json::Value *value) {
  const llvm::json::Array *array = value ? value->getAsArray() : nullptr;
  if (!array)
    return std::nullopt;
  std::vector<int64_t> result;
  for (const llvm::json::Value &item : *array) {
    std::optional<int64_t> n = item.getAsInteger();
    if (!n || *n < 0)
      return std::nullopt;
    result.push_back(*n);
  }
  return result;
}

llvm::Expected<SafetensorsTensor> parseEntry(const llvm::json::Value &value,
                                             uint64_t dataBytes, llvm::StringRef path,
                                             llvm::StringRef name) {
  auto fail = [&](const std::string &what) {
    return llvm::createStringError("%s: tensor '%s': %s", path.str().c_str(),
                                   name.str().c_str(), what.c_str());
  };
  const llvm::json::Object *object = value.getAsObject();
  std::optional<llvm::StringRef> dtype =
      object ? object->getString("dtype") : std::nullopt;
  std::optional<std::vector<int64_t>> shape =
      integersOf(object ? object->get("shape") : nullptr);
  std::optional<std::vector<int64_t>> offsets =
      integersOf(object ? object->get("data_offsets") : nullptr);
  if (!dtype || !shape || !offsets || offsets->size() != 2)
    return fail("needs a dtype string, a shape of non-negative integers and "
                "data_offsets [begin, end]");
  SafetensorsTensor tensor{dtype->str(), *shape, uint64_t((*offsets)[0]),
                           uint64_t((*offsets)[1])};
  if (tensor.begin > tensor.end || tensor.end > dataBytes)
    return fail("data_offsets [" + std::to_string(tensor.begin) + ", " +
                std::to_string(tensor.end) + "] run past the end of the data (" +
                std::to_string(dataBytes) + " bytes)");
  if (uint64_t bytes = elementBytes(tensor.dtype)) {
    for (int64_t d : tensor.shape)
      if (__builtin_mul_overflow(bytes, uint64_t(d), &bytes))
        return fail("shape " + formatShape(tensor.shape) + " overflows");
    if (bytes != tensor.end - tensor.begin)
      return fail(tensor.dtype + " " + formatShape(tensor.shape) + " needs " +
                  std::to_string(bytes) + " bytes, data_offsets cover " +
                  std::to_string(tensor.end - tensor.begin));
  }
  return tensor;
}

} // namespace

llvm::Expected<SafetensorsFile> SafetensorsFile::open(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read %s: %s",
                                   path.str().c_str(),
                                   buffer.getError().message().c_str());
  SafetensorsFile file;
  file.buffer = std::move(*buffer);
  const uint64_t size = file.buffer->getBufferSize();
  if (size < 8)
    return llvm::createStringError(
        "%s: %llu bytes are too short for a safetensors header", path.str().c_str(),
        (unsigned long long)size);
  uint64_t headerBytes;
  std::memcpy(&headerBytes, file.buffer->getBufferStart(), 8);
  if (headerBytes > size - 8)
    return llvm::createStringError(
        "%s: header length %llu runs past the end of the file (%llu bytes)",
        path.str().c_str(), (unsigned long long)headerBytes, (unsigned long long)size);
  file.dataStart = 8 + headerBytes;

  auto header = llvm::json::parse(file.buffer->getBuffer().substr(8, headerBytes));
  if (!header)
    return llvm::createStringError("%s: invalid JSON header: %s", path.str().c_str(),
                                   llvm::toString(header.takeError()).c_str());
  const llvm::json::Object *root = header->getAsObject();
  if (!root)
    return llvm::createStringError("%s: the JSON header is not an object",
                                   path.str().c_str());
  for (const auto &[key, value] : *root) {
    if (key == "__metadata__")
      continue;
    auto entry = parseEntry(value, size - file.dataStart, path, key);
    if (!entry)
      return entry.takeError();
    file.entries[key.str()] = std::move(*entry);
  }
  return file;
}

const SafetensorsTensor *SafetensorsFile::find(llvm::StringRef name) const {
  auto it = entries.find(name);
  return it == entries.end() ? nullptr : &it->second;
}

llvm::ArrayRef<uint8_t> SafetensorsFile::bytes(const SafetensorsTensor &tensor) const {
  auto *start = reinterpret_cast<const uint8_t *>(buffer->getBufferStart()) + dataStart;
  return {start + tensor.begin, start + tensor.end};
}

llvm::Error writeSafetensors(llvm::StringRef path,
                             llvm::ArrayRef<SafetensorsBlob> tensors) {
  llvm::json::Object header;
  uint64_t offset = 0;
  for (const SafetensorsBlob &blob : tensors) {
    header[blob.name] = llvm::json::Object{
        {"dtype", blob.dtype},
        {"shape", llvm::json::Array(blob.shape)},
        {"data_offsets", llvm::json::Array{offset, offset + blob.bytes.size()}}};
    offset += blob.bytes.size();
  }
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(header));
  text.append((8 - text.size() % 8) % 8, ' '); // the data starts 8-byte aligned

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::createStringError(ec, "cannot write %s: %s", path.str().c_str(),
                                   ec.message().c_str());
  uint64_t headerBytes = text.size();
  os.write(reinterpret_cast<const char *>(&headerBytes), 8);
  os << text;
  for (const SafetensorsBlob &blob : tensors)
    os.write(reinterpret_cast<const char *>(blob.bytes.data()), blob.bytes.size());
  os.close();
  if (os.has_error())
    return llvm::createStringError(os.error(), "cannot write %s: %s", path.str().c_str(),
                                   os.error().message().c_str());
  return llvm::Error::success();
}

} // namespace tilejit::models
