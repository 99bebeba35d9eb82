// The `checkpoint-index` target: a sharded checkpoint directory as Hugging Face
// writes one, model.safetensors.index.json plus two shards, read through
// NemotronHCheckpoint::open and loadMambaLayer. The input is a u32
// little-endian index length, the index text, a u32 length of the first
// shard, its bytes, then the second shard (the config is the tests' small
// one, which the `checkpoint` target mutates). Invariants beyond "no crash": a
// checkpoint whose index names a file outside its directory never opens, and
// a layer that loads holds exactly the bytes of the shard each tensor came from.
#include "FuzzTargets.h"

#include "tilejit/models/nemotron_h/NemotronH.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <array>
#include <cstring>
#include <optional>

using namespace tilejit::models;

namespace tilejit::fuzz {
namespace {

const char *const shardNames[2] = {"model-00001-of-00002.safetensors",
                                   "model-00002-of-00002.safetensors"};

/// The checkpoint directory: a subdirectory of the scratch one, so that
/// nothing the other targets write there is taken for a shard.
std::string checkpointDir() {
  llvm::SmallString<256> path(scratchDir());
  llvm::sys::path::append(path, "checkpoint");
  static bool made = !llvm::sys::fs::create_directories(path);
  check(made, "cannot create the checkpoint directory");
  return std::string(path);
}

std::string inDir(llvm::StringRef dir, llvm::StringRef name) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// Splits `input` into the index text and the two shards' bytes.
std::optional<std::array<llvm::StringRef, 3>> unpack(llvm::ArrayRef<uint8_t> input) {
  llvm::StringRef rest(reinterpret_cast<const char *>(input.data()), input.size());
  std::array<llvm::StringRef, 3> parts;
  for (int i = 0; i < 2; ++i) {
    if (rest.size() < 4)
      return std::nullopt;
    uint32_t bytes = llvm::support::endian::read32le(rest.data());
    rest = rest.drop_front(4);
    if (bytes > rest.size())
      return std::nullopt;
    parts[i] = rest.take_front(bytes);
    rest = rest.drop_front(bytes);
  }
  parts[2] = rest;
  return parts;
}

std::string pack(llvm::StringRef index, llvm::StringRef first, llvm::StringRef second) {
  std::string out;
  for (llvm::StringRef part : {index, first}) {
    char length[4];
    llvm::support::endian::write32le(length, uint32_t(part.size()));
    out.append(length, 4);
    out += part.str();
  }
  return out + second.str();
}

/// Whether the index text names a shard by an absolute path or through "..".
bool namesOutside(llvm::StringRef indexText) {
  auto index = llvm::json::parse(indexText);
  if (!index) {
    llvm::consumeError(index.takeError());
    return false;
  }
  const llvm::json::Object *root = index->getAsObject();
  const llvm::json::Object *map = root ? root->getObject("weight_map") : nullptr;
  if (!map)
    return false;
  for (const auto &entry : *map) {
    std::optional<llvm::StringRef> name = entry.second.getAsString();
    if (!name)
      continue;
    if (llvm::sys::path::is_absolute(*name))
      return true;
    for (llvm::StringRef part :
         llvm::make_range(llvm::sys::path::begin(*name), llvm::sys::path::end(*name)))
      if (part == "..")
        return true;
  }
  return false;
}

std::string readOrDie(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  check(bool(buffer), "cannot read back a seed file");
  return (*buffer)->getBuffer().str();
}

} // namespace

void runCheckpointIndex(llvm::ArrayRef<uint8_t> input) {
  auto parts = unpack(input);
  if (!parts)
    return;
  const std::string dir = checkpointDir();
  writeFileOrDie(inDir(dir, "config.json"), smallConfig);
  writeFileOrDie(inDir(dir, "model.safetensors.index.json"), (*parts)[0]);
  for (int i = 0; i < 2; ++i)
    writeFileOrDie(inDir(dir, shardNames[i]), (*parts)[i + 1]);
  auto checkpoint = NemotronHCheckpoint::open(dir);
  check(!checkpoint || !namesOutside((*parts)[0]),
        "a checkpoint whose index names a file outside its directory opened");
  if (!checkpoint) {
    llvm::consumeError(checkpoint.takeError());
    return;
  }
  std::vector<std::optional<SafetensorsFile>> shards;
  for (const char *name : shardNames) {
    auto shard = SafetensorsFile::open(inDir(dir, name));
    shards.emplace_back();
    if (shard)
      shards.back() = std::move(*shard);
    else
      llvm::consumeError(shard.takeError());
  }
  for (int64_t layer : checkpoint->config().mambaLayers()) {
    auto weights = checkpoint->loadMambaLayer(layer);
    if (!weights) {
      llvm::consumeError(weights.takeError());
      continue;
    }
    for (const SafetensorsBlob &blob : exportMambaLayer(*weights)) {
      bool found = false;
      for (const std::optional<SafetensorsFile> &shard : shards) {
        const SafetensorsTensor *tensor = shard ? shard->find(blob.name) : nullptr;
        if (!tensor)
          continue;
        llvm::ArrayRef<uint8_t> bytes = shard->bytes(*tensor);
        found = bytes.size() == blob.bytes.size() &&
                std::memcmp(bytes.data(), blob.bytes.data(), bytes.size()) == 0;
      }
      check(found, "a loaded tensor differs from the bytes of the shard holding it");
    }
  }
}

Seeds checkpointIndexSeeds(llvm::StringRef) {
  auto config = NemotronHConfig::fromJson(smallConfig, "seed");
  check(bool(config), "the seed config does not parse");
  llvm::json::Object weightMap;
  std::string shardBytes[2];
  for (int i = 0; i < 2; ++i) {
    auto weights = syntheticMambaLayer(*config, i == 0 ? 0 : 2, 42);
    check(bool(weights), "no synthetic seed weights");
    std::vector<SafetensorsBlob> blobs = exportMambaLayer(*weights);
    for (const SafetensorsBlob &blob : blobs)
      weightMap[blob.name] = shardNames[i];
    std::string path = inDir(scratchDir(), "seed-shard.safetensors");
    check(!llvm::errorToBool(writeSafetensors(path, blobs)), "cannot write a seed shard");
    shardBytes[i] = readOrDie(path);
  }
  std::string index;
  llvm::raw_string_ostream(index) << llvm::json::Value(
      llvm::json::Object{{"metadata", llvm::json::Object{{"total_size", 0}}},
                         {"weight_map", std::move(weightMap)}});
  return {{"two-shards.ckpt", pack(index, shardBytes[0], shardBytes[1])},
          {"swapped-shards.ckpt", pack(index, shardBytes[1], shardBytes[0])}};
}

} // namespace tilejit::fuzz
