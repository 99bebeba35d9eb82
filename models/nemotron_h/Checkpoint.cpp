// Opening a checkpoint directory: its config, quantization declaration, index
// and shards, each tensor placed in exactly one shard (NemotronH.h); the layers
// are read from it by LayerWeights.cpp.
#include "tilejit/models/nemotron_h/NemotronH.h"
#include "tilejit/support/InputFile.h"
#include "tilejit/support/Json.h"

#include "HuggingFaceJson.h"
#include "TensorNames.h"

#include "llvm/Support/Path.h"

#include <map>

namespace tilejit::models {
namespace {

std::string joinPath(llvm::StringRef dir, llvm::StringRef file) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, file);
  return std::string(path);
}

/// The shard files listed by model.safetensors.index.json's weight_map, as
/// paths inside `dir`, with the tensors the index places in each.
llvm::Expected<std::map<std::string, std::vector<std::string>>>
shardsOfIndex(llvm::StringRef dir, const support::InputFile &index) {
  llvm::StringRef indexPath = index.path();
  auto text = index.readAll(support::kMaxIndexBytes);
  if (!text)
    return text.takeError();
  auto parsed = support::parseJson(*text);
  if (!parsed)
    return llvm::createStringError("%s: invalid JSON: %s", indexPath.str().c_str(),
                                   llvm::toString(parsed.takeError()).c_str());
  const llvm::json::Object *root = parsed->getAsObject();
  const llvm::json::Object *map = root ? root->getObject("weight_map") : nullptr;
  if (!map)
    return llvm::createStringError("%s: no weight_map object", indexPath.str().c_str());
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto &[tensor, file] : *map) {
    std::optional<llvm::StringRef> name = file.getAsString();
    if (!name)
      return llvm::createStringError("%s: weight_map entry '%s' is not a file name",
                                     indexPath.str().c_str(), tensor.str().c_str());
    auto path = support::resolveInside(
        dir, *name, (indexPath + ": weight_map entry '" + tensor.str() + "'").str());
    if (!path)
      return path.takeError();
    shards[*path].push_back(tensor.str());
  }
  return shards;
}

} // namespace

llvm::Expected<NemotronHCheckpoint> NemotronHCheckpoint::open(llvm::StringRef dir) {
  NemotronHCheckpoint checkpoint;
  checkpoint.dir = dir.str();
  const std::string configPath = joinPath(dir, "config.json");
  // Through the one checked reader: regular files only, never blocking, sized.
  auto configText =
      support::readInputFile(configPath, "config", support::kMaxConfigBytes);
  if (!configText)
    return configText.takeError();
  auto config = NemotronHConfig::fromJson(*configText, configPath);
  if (!config)
    return config.takeError();
  checkpoint.cfg = *config;
  auto root = parseHuggingFaceJson(*configText, configPath);
  if (!root)
    return root.takeError();
  auto quant = QuantizationConfig::read(
      dir, root->getAsObject()->getObject("quantization_config"));
  if (!quant)
    return quant.takeError();
  checkpoint.quant = std::move(*quant);

  // The index's own claims are checked against the shards: a tensor it
  // places in a shard that lacks it would otherwise load from wherever it is.
  std::map<std::string, std::vector<std::string>> files;
  std::string indexPath = joinPath(dir, "model.safetensors.index.json");
  auto index = support::InputFile::openIfExists(indexPath, "checkpoint index");
  if (!index)
    return index.takeError();
  if (*index) {
    auto listed = shardsOfIndex(dir, **index);
    if (!listed)
      return listed.takeError();
    files = std::move(*listed);
  } else {
    files[joinPath(dir, "model.safetensors")] = {};
  }
  for (const auto &[file, tensors] : files) {
    auto shard = SafetensorsFile::open(file);
    if (!shard)
      return shard.takeError();
    for (const std::string &tensor : tensors)
      if (!shard->find(tensor))
        return llvm::createStringError("%s: the index places tensor '%s' in %s, which "
                                       "does not hold it",
                                       dir.str().c_str(), tensor.c_str(), file.c_str());
    for (const auto &entry : shard->tensors())
      if (!checkpoint.shardOf.try_emplace(entry.getKey(), checkpoint.shards.size())
               .second)
        return llvm::createStringError("%s: tensor '%s' appears in two shards",
                                       dir.str().c_str(), entry.getKey().str().c_str());
    checkpoint.shards.push_back(std::move(*shard));
  }
  auto prefix = findTensorPrefix(dir, checkpoint.shardOf, checkpoint.cfg);
  if (!prefix)
    return prefix.takeError();
  checkpoint.prefix = std::move(*prefix);
  return checkpoint;
}

} // namespace tilejit::models
