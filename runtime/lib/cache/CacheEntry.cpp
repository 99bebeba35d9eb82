// Serialization of disk cache entries. All integers are little-endian; strings are
// a u32 length then the bytes. The checksum is XXH3-64 of the payload.
#include "CacheEntry.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

using namespace llvm;

namespace tilejit::runtime::cache {

namespace {
constexpr char magic[8] = {'T', 'J', 'K', 'E', 'R', 'N', 'E', 'L'};
/// magic, u32 version, u32 header size, u64 payload length, u64 checksum.
constexpr size_t headerBytes = 8 + 4 + 4 + 8 + 8;

void putU32(std::string &out, uint32_t value) {
  char bytes[4];
  support::endian::write32le(bytes, value);
  out.append(bytes, 4);
}

void putU64(std::string &out, uint64_t value) {
  char bytes[8];
  support::endian::write64le(bytes, value);
  out.append(bytes, 8);
}

void putString(std::string &out, StringRef text) {
  putU32(out, text.size());
  out.append(text.data(), text.size());
}

/// Reads the payload front to back; every read is bounds-checked. The first
/// failure sticks: later reads do nothing and finish() returns it.
class Reader {
public:
  explicit Reader(StringRef bytes) : rest(bytes) {}

  void u32(uint32_t &out, StringRef field) {
    if (!need(4, field))
      return;
    out = support::endian::read32le(rest.data());
    rest = rest.drop_front(4);
  }

  void string(std::string &out, StringRef field) {
    uint32_t size = 0;
    u32(size, field);
    if (!need(size, field))
      return;
    out = rest.take_front(size).str();
    rest = rest.drop_front(size);
  }

  /// The first failure, or one for bytes left over.
  Error finish() {
    if (failure.empty() && !rest.empty())
      failure = "malformed payload: bytes after the PTX";
    if (failure.empty())
      return Error::success();
    return createStringError(inconvertibleErrorCode(), failure);
  }

private:
  bool need(size_t bytes, StringRef field) {
    if (!failure.empty())
      return false;
    if (rest.size() >= bytes)
      return true;
    failure = ("malformed payload: it ends inside " + field).str();
    return false;
  }

  StringRef rest;
  std::string failure;
};

/// A parameter that holds no grid axis.
constexpr uint32_t noGridAxis = ~uint32_t(0);

Error corrupt(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}
} // namespace

std::string kernelBytes(const CompiledKernel &kernel) {
  std::string payload;
  putString(payload, kernel.entryName);
  putU32(payload, kernel.launch.threadsPerBlock);
  putU32(payload, kernel.launch.dynamicSharedBytes);
  putU32(payload, kernel.launch.programsPerSM);
  putU32(payload, kernel.launch.waitsForPredecessors ? 1 : 0);
  putU32(payload, uint32_t(kernel.sums));
  putU32(payload, kernel.params.size());
  for (const KernelParam &param : kernel.params) {
    putString(payload, param.name);
    putString(payload, paramKindName(param.kind));
    putU32(payload, param.size);
    putString(payload, param.tensorMap ? param.tensorMap->toString() : "");
    putU32(payload, param.gridAxis ? *param.gridAxis : noGridAxis);
  }
  putString(payload, kernel.ptx);
  return payload;
}

std::string serializeEntry(const EntryMeta &meta, const CompiledKernel &kernel) {
  std::string payload;
  putString(payload, meta.key);
  putString(payload, meta.kernelName);
  putString(payload, meta.arch);
  payload += kernelBytes(kernel);

  std::string entry(magic, sizeof(magic));
  putU32(entry, entryFormatVersion);
  putU32(entry, headerBytes);
  putU64(entry, payload.size());
  putU64(entry, xxh3_64bits(payload));
  return entry + payload;
}

Expected<std::pair<EntryMeta, CompiledKernel>> parseEntry(StringRef bytes) {
  if (bytes.size() < headerBytes)
    return corrupt(formatv("truncated: {0} bytes, shorter than the {1}-byte header",
                           bytes.size(), headerBytes));
  if (!bytes.starts_with(StringRef(magic, sizeof(magic))))
    return corrupt("not a tilejit cache entry (bad magic)");
  const char *header = bytes.data() + sizeof(magic);
  uint32_t version = support::endian::read32le(header);
  uint32_t declaredHeader = support::endian::read32le(header + 4);
  uint64_t payloadBytes = support::endian::read64le(header + 8);
  uint64_t checksum = support::endian::read64le(header + 16);
  if (version != entryFormatVersion || declaredHeader != headerBytes)
    return corrupt(
        formatv("format version {0} (header {1} bytes), expected {2} ({3} bytes)",
                version, declaredHeader, entryFormatVersion, headerBytes));
  StringRef payload = bytes.drop_front(headerBytes);
  if (payload.size() != payloadBytes)
    return corrupt(
        formatv("{0}: the header promises {1} payload bytes, the file holds {2}",
                payload.size() < payloadBytes ? "truncated" : "overlong", payloadBytes,
                payload.size()));
  uint64_t actual = xxh3_64bits(payload);
  if (actual != checksum)
    return corrupt(
        formatv("checksum mismatch: the header says {0:x16}, the payload hashes "
                "to {1:x16}",
                checksum, actual));

  EntryMeta meta;
  CompiledKernel kernel;
  Reader reader(payload);
  reader.string(meta.key, "the key");
  reader.string(meta.kernelName, "the kernel name");
  reader.string(meta.arch, "the arch");
  reader.string(kernel.entryName, "the entry name");
  reader.u32(kernel.launch.threadsPerBlock, "the block size");
  reader.u32(kernel.launch.dynamicSharedBytes, "the shared size");
  reader.u32(kernel.launch.programsPerSM, "the programs per multiprocessor");
  uint32_t waits = 0;
  reader.u32(waits, "the grid dependency flag");
  kernel.launch.waitsForPredecessors = waits != 0;
  uint32_t sums = 0;
  reader.u32(sums, "the sum precision");
  uint32_t paramCount = 0;
  reader.u32(paramCount, "the parameter count");
  std::vector<std::string> kinds, maps;
  // Bounded by the payload: each parameter takes at least 20 bytes.
  for (uint32_t i = 0; i < paramCount && i <= payload.size() / 20; ++i) {
    KernelParam param{"", ParamKind::Pointer, 0};
    std::string kind, map;
    uint32_t gridAxis = noGridAxis;
    reader.string(param.name, "a parameter name");
    reader.string(kind, "a parameter kind");
    reader.u32(param.size, "a parameter size");
    reader.string(map, "a tensor map");
    reader.u32(gridAxis, "a grid axis");
    if (gridAxis > 1 && gridAxis != noGridAxis)
      return corrupt(formatv("malformed payload: grid axis {0}", gridAxis));
    if (gridAxis != noGridAxis)
      param.gridAxis = uint8_t(gridAxis);
    kernel.params.push_back(std::move(param));
    kinds.push_back(std::move(kind));
    maps.push_back(std::move(map));
  }
  reader.string(kernel.ptx, "the PTX");
  if (Error err = reader.finish())
    return std::move(err);
  if (sums > uint32_t(SumPrecision::Reduced))
    return corrupt(formatv("malformed payload: sum precision {0}", sums));
  kernel.sums = SumPrecision(sums);
  if (kernel.params.size() != paramCount)
    return corrupt(formatv("malformed payload: {0} parameters", paramCount));
  for (auto [param, kind, map] : llvm::zip_equal(kernel.params, kinds, maps)) {
    std::optional<ParamKind> parsed = parseParamKind(kind);
    if (!parsed)
      return corrupt(formatv("malformed payload: parameter kind '{0}'", kind));
    param.kind = *parsed;
    if ((param.kind == ParamKind::TensorMap) != !map.empty())
      return corrupt(formatv("malformed payload: parameter '{0}' of kind '{1}' with "
                             "tensor map '{2}'",
                             param.name, kind, map));
    if (map.empty())
      continue;
    auto spec = TensorMapSpec::parse(map);
    if (!spec)
      return corrupt("malformed payload: " + toString(spec.takeError()));
    param.tensorMap = *spec;
  }
  return std::make_pair(std::move(meta), std::move(kernel));
}

} // namespace tilejit::runtime::cache
