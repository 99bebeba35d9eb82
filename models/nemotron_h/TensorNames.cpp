// The Hugging Face names of a Mamba layer's tensors and the prefix a wrapped
// checkpoint puts in front of them. A prefix is found from the tensors, never
// guessed from a list of known wrappers, and an ambiguous one is refused.
#include "TensorNames.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

namespace tilejit::models {

std::string mambaTensorName(int64_t layer, llvm::StringRef suffix) {
  return "backbone.layers." + std::to_string(layer) + ".mixer." + suffix.str();
}

namespace {

/// `name` with every numeric component written '*' (layers.12.mixer -> layers.*.mixer).
std::string pattern(llvm::StringRef name) {
  llvm::SmallVector<llvm::StringRef> parts;
  name.split(parts, '.');
  for (llvm::StringRef &part : parts)
    if (!part.empty() && llvm::all_of(part, llvm::isDigit))
      part = "*";
  return llvm::join(parts, ".");
}

/// The distinct patterns of `names`, sorted, the first `shown` quoted and the
/// rest counted: what a refusal lists as seen.
std::string describeNames(const llvm::StringMap<size_t> &names, size_t shown = 10) {
  std::set<std::string> patterns;
  for (const auto &entry : names)
    patterns.insert(pattern(entry.getKey()));
  std::string text;
  size_t listed = 0;
  for (const std::string &p : patterns) {
    if (listed == shown)
      break;
    text += (listed++ ? ", '" : "'") + p + "'";
  }
  if (patterns.size() > shown)
    text += llvm::formatv(" and {0} more", patterns.size() - shown).str();
  return text;
}

} // namespace

llvm::Expected<std::string> findTensorPrefix(llvm::StringRef dir,
                                             const llvm::StringMap<size_t> &names,
                                             const NemotronHConfig &config) {
  std::vector<int64_t> mamba = config.mambaLayers();
  if (mamba.empty())
    return std::string();
  const std::string published = mambaTensorName(mamba.front(), "in_proj.weight");
  std::set<std::string> prefixes;
  for (const auto &entry : names) {
    llvm::StringRef name = entry.getKey();
    if (!name.ends_with(published))
      continue;
    llvm::StringRef prefix = name.drop_back(published.size());
    if (prefix.empty() || prefix.ends_with("."))
      prefixes.insert(prefix.str());
  }
  if (prefixes.size() == 1)
    return *prefixes.begin();
  if (prefixes.empty())
    return llvm::createStringError(llvm::formatv(
        "{0}: no tensor '{1}' (Mamba layer {2} of the config), under no prefix or any "
        "wrapper's ('language_model.{1}', 'model.{1}', ...); the checkpoint's {3} "
        "tensor(s) are named {4}",
        dir, published, mamba.front(), names.size(), describeNames(names)));
  std::string found;
  for (const std::string &prefix : prefixes)
    found += (found.empty() ? "'" : ", '") + prefix + published + "'";
  return llvm::createStringError(
      llvm::formatv("{0}: Mamba layer {1} appears under {2} prefixes ({3}); tilejit "
                    "loads one model from a checkpoint and cannot tell which is meant",
                    dir, mamba.front(), prefixes.size(), found));
}

} // namespace tilejit::models
