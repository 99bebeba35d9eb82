// The host's memory (HostMemory.h).
#include "tilejit/support/HostMemory.h"

#include "llvm/Support/FormatVariadic.h"

#include <unistd.h>

namespace tilejit::support {

uint64_t physicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), pageBytes = sysconf(_SC_PAGESIZE);
  return pages > 0 && pageBytes > 0 ? uint64_t(pages) * uint64_t(pageBytes) : UINT64_MAX;
}

std::string formatBytes(uint64_t bytes) {
  const char *units[] = {"bytes", "KB", "MB", "GB", "TB", "PB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1000 && unit < 5)
    value /= 1000, ++unit;
  return unit == 0 ? llvm::formatv("{0} bytes", bytes).str()
                   : llvm::formatv("{0:f1} {1}", value, units[unit]).str();
}

} // namespace tilejit::support
