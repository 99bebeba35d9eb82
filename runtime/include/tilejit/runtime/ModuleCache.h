// The memory cache of loaded modules, keyed by disk key + CUDA context + weight slot
// (docs/design.md#cache-keys). It owns the modules: eviction and destruction unload them.
#ifndef TILEJIT_RUNTIME_MODULECACHE_H
#define TILEJIT_RUNTIME_MODULECACHE_H

#include "tilejit/runtime/CompilerInterface.h"
#include "tilejit/runtime/DeviceApi.h"

#include <atomic>
#include <compare>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace tilejit::runtime {

/// The memory key. A module specialized to a weight is found only through its
/// slot's id, never through an address.
struct ModuleKey {
  std::string diskKey;
  /// DeviceApi::contextId().
  uint64_t contextId = 0;
  /// WeightSlot::id(); 0 for a kernel bound to no weight.
  uint64_t weightSlotId = 0;

  auto operator<=>(const ModuleKey &other) const = default;
};

/// A module loaded in a context, with the function to launch and the
/// metadata it was compiled with.
struct LoadedModule {
  ModuleHandle module;
  FunctionHandle function;
  std::shared_ptr<const CompiledKernel> kernel;
};

/// Thread-safe. Every removal bumps generation(), so a holder of a function
/// handle can tell cheaply whether it may still be valid.
class ModuleCache {
public:
  explicit ModuleCache(DeviceApi &device) : device(device) {}
  /// Unloads every module.
  ~ModuleCache();

  std::optional<LoadedModule> find(const ModuleKey &key) const;
  /// Adds `module` under `key`. When another thread added one first, `module`
  /// is unloaded and the cached one returned.
  LoadedModule insert(const ModuleKey &key, LoadedModule module);
  /// Unloads and forgets the modules of weight slot `slotId`; returns how many.
  unsigned evictWeightSlot(uint64_t slotId);
  /// Unloads and forgets every module; returns how many.
  unsigned clear();

  size_t size() const;
  /// Incremented by every eviction and clear.
  uint64_t generation() const { return evictions.load(std::memory_order_acquire); }

private:
  /// Unloads `module`, reporting a failure on stderr (eviction has no caller
  /// to return it to).
  void unload(const LoadedModule &module);

  DeviceApi &device;
  mutable std::mutex mutex;
  std::map<ModuleKey, LoadedModule> modules;
  std::atomic<uint64_t> evictions{0};
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_MODULECACHE_H
