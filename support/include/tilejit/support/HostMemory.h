// The host's memory, for the checks that refuse work too large for the host
// before any of it is allocated (a plan's buffers, a tuning launch's inputs):
// an allocation past it would otherwise end the process. LLVMSupport only.
#ifndef TILEJIT_SUPPORT_HOSTMEMORY_H
#define TILEJIT_SUPPORT_HOSTMEMORY_H

#include <cstdint>
#include <string>

namespace tilejit::support {

/// The host's physical memory in bytes; UINT64_MAX when the system cannot say.
uint64_t physicalMemoryBytes();

/// What this process may still allocate: the least of the physical memory, the
/// memory the kernel reports available, what the address-space and data
/// rlimits leave, and what the process's cgroup (v2) leaves. The number every
/// check that refuses work too large for the host compares against.
uint64_t allocatableMemoryBytes();

/// `bytes` for a message, in decimal units: "512 bytes", "3.2 GB", "1.1 PB".
std::string formatBytes(uint64_t bytes);

} // namespace tilejit::support

#endif // TILEJIT_SUPPORT_HOSTMEMORY_H
