// Disk cache keys: SHA-256 over every input a compiled kernel depends on.
#include "CacheEntry.h"
#include "tilejit/runtime/DiskCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/SHA256.h"

using namespace llvm;

namespace tilejit::runtime {

/// Hashes a field as name, length, bytes: a byte moved from one field to the
/// next changes the hash.
static void hashField(SHA256 &hash, StringRef name, StringRef value) {
  uint8_t length[8];
  support::endian::write64le(length, value.size());
  hash.update(name);
  hash.update(ArrayRef<uint8_t>(length));
  hash.update(value);
}

std::string computeDiskKey(const DiskKeyInputs &inputs) {
  SHA256 hash;
  hashField(hash, "key-format", "tilejit-disk-key");
  hashField(hash, "entry-format", utostr(cache::entryFormatVersion));
  hashField(hash, "ir", inputs.canonicalIR);
  hashField(hash, "options", inputs.options);
  hashField(hash, "arch", inputs.arch);
  hashField(hash, "ptx", inputs.ptxVersion);
  hashField(hash, "build", inputs.buildId);
  hashField(hash, "llvm", inputs.llvmVersion);
  return toHex(hash.final(), /*LowerCase=*/true);
}

bool isDiskKey(StringRef key) {
  return key.size() == 64 &&
         all_of(key, [](char c) { return isDigit(c) || (c >= 'a' && c <= 'f'); });
}

} // namespace tilejit::runtime
