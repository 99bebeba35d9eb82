// Enumeration of candidate configurations and the arch limits table used when no
// device is present.
#include "tilejit/tuning/Candidates.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace tilejit::tuning {

StaticLimits limitsForArch(const Arch &arch) {
  StaticLimits limits;
  limits.caps = arch.capabilities();
  // The opt-in maximum per block (the arch's device profile); a device, when
  // present, replaces it with the driver's number.
  limits.maxSharedBytes = arch.profile().sharedBytesPerBlock;
  return limits;
}

std::string Candidate::label() const {
  std::string out = formatNamedValues(config);
  return isDefault ? out + " (default)" : out;
}

llvm::json::Value Candidate::toJSON() const {
  llvm::json::Object configJSON;
  for (const auto &[name, value] : config)
    configJSON[name] = value;
  llvm::json::Object out{{"config", std::move(configJSON)},
                         {"default", isDefault},
                         {"status", pruned.empty() ? "kept" : "pruned"}};
  if (!pruned.empty())
    out["reason"] = pruned;
  if (threads) {
    out["threads"] = threads;
    out["shared_bytes"] = sharedBytes;
    out["tile_words_per_thread"] = tileWordsPerThread;
  }
  return out;
}

std::vector<Candidate> enumerateCandidates(const KernelDef &def,
                                           const Specialization &base,
                                           llvm::ArrayRef<std::string> fixed) {
  // Each tunable constant's values: the base value first (so the first
  // product is the default configuration, or the one a tune starts from),
  // then its default and its list without repeats.
  std::vector<std::pair<std::string, std::vector<int64_t>>> axes;
  for (const KernelConstant &c : def.constants) {
    if (!c.isTunable())
      continue;
    std::vector<int64_t> values{base.get(c.name)};
    if (!llvm::is_contained(fixed, c.name)) {
      std::vector<int64_t> others{c.defaultValue};
      llvm::append_range(others, c.candidates);
      for (int64_t v : others)
        if (!llvm::is_contained(values, v))
          values.push_back(v);
    }
    axes.emplace_back(c.name, std::move(values));
  }
  std::vector<Candidate> out;
  std::vector<size_t> index(axes.size(), 0);
  while (true) {
    Candidate candidate;
    candidate.spec = base;
    candidate.isDefault = true;
    for (size_t a = 0; a < axes.size(); ++a) {
      int64_t value = axes[a].second[index[a]];
      candidate.config[axes[a].first] = value;
      candidate.spec.set(axes[a].first, value);
      // Default means every constant at its declared default, not merely
      // the first of each list (which --set may have changed).
      auto c = llvm::find_if(def.constants, [&](const KernelConstant &k) {
        return k.name == axes[a].first;
      });
      candidate.isDefault &= value == c->defaultValue;
    }
    out.push_back(std::move(candidate));
    // Odometer over the axes, last constant fastest.
    size_t a = axes.size();
    while (a > 0) {
      --a;
      if (++index[a] < axes[a].second.size())
        break;
      index[a] = 0;
      if (a == 0)
        return out;
    }
    if (axes.empty())
      return out;
  }
}

std::vector<Candidate> prunedCandidates(const TuneTarget &target,
                                        const StaticLimits &limits, const Arch &arch,
                                        llvm::ArrayRef<std::string> fixed) {
  std::vector<Candidate> candidates =
      enumerateCandidates(*target.def, target.base, fixed);
  std::map<std::string, std::string> built; // IR hash -> the first label
  for (Candidate &c : candidates) {
    pruneCandidate(*target.def, target.problem, target.shape, limits, arch, c);
    if (!c.pruned.empty())
      continue;
    auto [it, first] = built.try_emplace(c.irHash, c.label());
    if (!first && !c.isDefault)
      c.pruned = "the same kernel as " + it->second;
  }
  return candidates;
}

} // namespace tilejit::tuning
