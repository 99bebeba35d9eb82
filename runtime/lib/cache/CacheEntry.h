// The on-disk format of one kernel cache entry: a fixed header (magic, format
// version, payload length, checksum) and a payload holding a CompiledKernel.
// Private to runtime/lib/cache.
#ifndef TILEJIT_RUNTIME_LIB_CACHE_CACHEENTRY_H
#define TILEJIT_RUNTIME_LIB_CACHE_CACHEENTRY_H

#include "tilejit/runtime/CompilerInterface.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace tilejit::runtime::cache {

/// Bumped whenever the layout changes; also hashed into every key, so entries
/// of another format are never looked up (they age out through LRU eviction).
constexpr uint32_t entryFormatVersion = 4;

/// What an entry says about itself, beside the kernel.
struct EntryMeta {
  /// The key the entry was stored under: a file renamed or copied to another
  /// key's name is caught.
  std::string key;
  std::string kernelName;
  std::string arch;
};

/// What the device is handed of `kernel` (entry, launch sizes, parameters,
/// PTX) as the payload's tail: serializeEntry's and codeFingerprint's bytes.
std::string kernelBytes(const CompiledKernel &kernel);

/// The entry's bytes: header then payload.
std::string serializeEntry(const EntryMeta &meta, const CompiledKernel &kernel);

/// Checks the header (magic, version, payload length against the file size,
/// checksum) and parses the payload. The error says what is wrong with the
/// numbers that disagree ("truncated: the header promises 812 payload bytes,
/// the file holds 400").
llvm::Expected<std::pair<EntryMeta, CompiledKernel>> parseEntry(llvm::StringRef bytes);

} // namespace tilejit::runtime::cache

#endif // TILEJIT_RUNTIME_LIB_CACHE_CACHEENTRY_H
