// The memory module cache: a map from ModuleKey to loaded modules it owns.
#include "tilejit/runtime/ModuleCache.h"

#include "tilejit/runtime/DeviceMemory.h"

using namespace llvm;

namespace tilejit::runtime {

ModuleCache::~ModuleCache() { clear(); }

void ModuleCache::unload(const LoadedModule &module) {
  reportUnhandled(device.unloadModule(module.module));
}

std::optional<LoadedModule> ModuleCache::find(const ModuleKey &key) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = modules.find(key);
  if (it == modules.end())
    return std::nullopt;
  return it->second;
}

LoadedModule ModuleCache::insert(const ModuleKey &key, LoadedModule module) {
  std::unique_lock<std::mutex> lock(mutex);
  auto [it, inserted] = modules.emplace(key, module);
  if (inserted)
    return module;
  LoadedModule existing = it->second;
  lock.unlock();
  unload(module);
  return existing;
}

unsigned ModuleCache::evictWeightSlot(uint64_t slotId) {
  std::vector<LoadedModule> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = modules.begin(); it != modules.end();) {
      if (it->first.weightSlotId == slotId) {
        evicted.push_back(it->second);
        it = modules.erase(it);
      } else {
        ++it;
      }
    }
    evictions.fetch_add(1, std::memory_order_acq_rel);
  }
  for (const LoadedModule &module : evicted)
    unload(module);
  return evicted.size();
}

unsigned ModuleCache::clear() {
  std::map<ModuleKey, LoadedModule> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex);
    evicted.swap(modules);
    evictions.fetch_add(1, std::memory_order_acq_rel);
  }
  for (const auto &[key, module] : evicted)
    unload(module);
  return evicted.size();
}

size_t ModuleCache::size() const {
  std::lock_guard<std::mutex> lock(mutex);
  return modules.size();
}

} // namespace tilejit::runtime
