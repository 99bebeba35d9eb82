// The safetensors format: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}}, then the data. Every range is checked
// against the file before a tensor is handed out; large files are memory-mapped.
#include "tilejit/models/nemotron_h/NemotronH.h"
#include "tilejit/support/InputFile.h"
#include "tilejit/support/Json.h"
#include "tilejit/support/OutputFile.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
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

/// The format's rule, as its reference reader applies it: the tensors' byte
/// ranges, in order of their offsets, tile the data section exactly. An
/// overlap would let two tensors alias one another's bytes (what one loads
/// is the other's data), a gap or a tail holds bytes no tensor accounts for.
llvm::Error checkDataCovered(const llvm::StringMap<SafetensorsTensor> &entries,
                             uint64_t dataBytes, llvm::StringRef path) {
  std::vector<std::pair<const SafetensorsTensor *, llvm::StringRef>> ranges;
  for (const auto &entry : entries)
    ranges.emplace_back(&entry.getValue(), entry.getKey());
  llvm::sort(ranges, [](const auto &a, const auto &b) {
    return std::tie(a.first->begin, a.first->end, a.second) <
           std::tie(b.first->begin, b.first->end, b.second);
  });
  auto describe = [](const std::pair<const SafetensorsTensor *, llvm::StringRef> &r) {
    return llvm::formatv("'{0}' [{1}, {2}]", r.second, r.first->begin, r.first->end)
        .str();
  };
  uint64_t covered = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const SafetensorsTensor &t = *ranges[i].first;
    if (t.begin < covered)
      return llvm::createStringError("%s: data_offsets of tensors %s and %s overlap",
                                     path.str().c_str(), describe(ranges[i - 1]).c_str(),
                                     describe(ranges[i]).c_str());
    if (t.begin > covered)
      return llvm::createStringError(
          "%s: data bytes [%llu, %llu) belong to no tensor (before %s)",
          path.str().c_str(), (unsigned long long)covered, (unsigned long long)t.begin,
          describe(ranges[i]).c_str());
    covered = t.end;
  }
  if (covered != dataBytes)
    return llvm::createStringError(
        "%s: the tensors cover %llu bytes of data, the file holds %llu after its header",
        path.str().c_str(), (unsigned long long)covered, (unsigned long long)dataBytes);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<SafetensorsFile> SafetensorsFile::open(llvm::StringRef path) {
  auto input = support::InputFile::open(path, "safetensors file");
  if (!input)
    return input.takeError();
  const uint64_t size = input->size();
  if (size < 8)
    return llvm::createStringError(
        "%s: %llu bytes are too short for a safetensors header", path.str().c_str(),
        (unsigned long long)size);
  auto prefix = input->readRange(0, 8);
  if (!prefix)
    return prefix.takeError();
  uint64_t headerBytes;
  std::memcpy(&headerBytes, prefix->data(), 8);
  if (headerBytes > size - 8)
    return llvm::createStringError(
        "%s: header length %llu runs past the end of the file (%llu bytes)",
        path.str().c_str(), (unsigned long long)headerBytes, (unsigned long long)size);
  if (headerBytes > support::kMaxSafetensorsHeaderBytes)
    return llvm::createStringError(
        "%s: header length %llu is over the format's limit of %llu bytes",
        path.str().c_str(), (unsigned long long)headerBytes,
        (unsigned long long)support::kMaxSafetensorsHeaderBytes);
  auto headerText = input->readRange(8, headerBytes);
  if (!headerText)
    return headerText.takeError();
  auto header = support::parseJson(*headerText);
  if (!header)
    return llvm::createStringError("%s: invalid JSON header: %s", path.str().c_str(),
                                   llvm::toString(header.takeError()).c_str());
  const llvm::json::Object *root = header->getAsObject();
  if (!root)
    return llvm::createStringError("%s: the JSON header is not an object",
                                   path.str().c_str());
  SafetensorsFile file;
  file.dataStart = 8 + headerBytes;
  for (const auto &[key, value] : *root) {
    if (key == "__metadata__")
      continue;
    auto entry = parseEntry(value, size - file.dataStart, path, key);
    if (!entry)
      return entry.takeError();
    file.entries[key.str()] = std::move(*entry);
  }
  if (auto err = checkDataCovered(file.entries, size - file.dataStart, path))
    return std::move(err);
  auto buffer = input->map();
  if (!buffer)
    return buffer.takeError();
  file.buffer = std::move(*buffer);
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
    return llvm::createStringError(ec, "cannot write safetensors file '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  uint64_t headerBytes = text.size();
  os.write(reinterpret_cast<const char *>(&headerBytes), 8);
  os << text;
  for (const SafetensorsBlob &blob : tensors)
    os.write(reinterpret_cast<const char *>(blob.bytes.data()), blob.bytes.size());
  return support::closeChecked(os, path, "safetensors file");
}

} // namespace tilejit::models
