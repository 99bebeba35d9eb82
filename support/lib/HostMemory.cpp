// The host's memory (HostMemory.h): what this process may still allocate, read
// from the kernel's accounting (Linux /proc and cgroup v2 files, getrlimit).
#include "tilejit/support/HostMemory.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <optional>
#include <sys/resource.h>
#include <unistd.h>

namespace tilejit::support {
namespace {

/// The text of a small /proc or /sys file, empty when it cannot be read.
std::string readSmallFile(const char *path) {
  auto buffer = llvm::MemoryBuffer::getFileAsStream(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

/// `key`'s value in kB from a "Key:   1234 kB" file (/proc/meminfo,
/// /proc/self/status), in bytes; nullopt when absent.
std::optional<uint64_t> kilobytesField(llvm::StringRef text, llvm::StringRef key) {
  for (llvm::StringRef line : llvm::split(text, '\n')) {
    if (!line.consume_front(key) || !line.consume_front(":"))
      continue;
    uint64_t kb;
    if (line.trim().split(' ').first.getAsInteger(10, kb))
      return std::nullopt;
    return kb * 1024;
  }
  return std::nullopt;
}

/// A cgroup v2 number ("max" is no limit).
std::optional<uint64_t> cgroupNumber(const char *path) {
  const std::string file = readSmallFile(path); // the StringRef below views it
  llvm::StringRef text = llvm::StringRef(file).trim();
  uint64_t value;
  if (text.empty() || text == "max" || text.getAsInteger(10, value))
    return std::nullopt;
  return value;
}

/// What is left of an rlimit after `used` bytes; nullopt when unlimited.
std::optional<uint64_t> rlimitLeft(int resource, std::optional<uint64_t> used) {
  rlimit limit;
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return std::nullopt;
  uint64_t cap = uint64_t(limit.rlim_cur), taken = used.value_or(0);
  return cap > taken ? cap - taken : 0;
}

} // namespace

uint64_t physicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), pageBytes = sysconf(_SC_PAGESIZE);
  return pages > 0 && pageBytes > 0 ? uint64_t(pages) * uint64_t(pageBytes) : UINT64_MAX;
}

uint64_t allocatableMemoryBytes() {
  uint64_t left = physicalMemoryBytes();
  auto cap = [&](std::optional<uint64_t> bound) {
    if (bound)
      left = std::min(left, *bound);
  };
  cap(kilobytesField(readSmallFile("/proc/meminfo"), "MemAvailable"));
  const std::string status = readSmallFile("/proc/self/status");
  cap(rlimitLeft(RLIMIT_AS, kilobytesField(status, "VmSize")));
  cap(rlimitLeft(RLIMIT_DATA, kilobytesField(status, "VmData")));
  // The process's own cgroup (v2: one line "0::/path"); its limit less its use.
  const std::string cgroup = readSmallFile("/proc/self/cgroup");
  llvm::StringRef group = llvm::StringRef(cgroup).trim();
  if (group.consume_front("0::")) {
    std::string dir = "/sys/fs/cgroup" + group.str();
    std::optional<uint64_t> max = cgroupNumber((dir + "/memory.max").c_str());
    std::optional<uint64_t> used = cgroupNumber((dir + "/memory.current").c_str());
    if (max)
      cap(*max > used.value_or(0) ? *max - used.value_or(0) : 0);
  }
  return left;
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
