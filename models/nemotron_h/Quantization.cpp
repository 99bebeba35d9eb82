// QuantizationConfig: the quantization a checkpoint declares (ModelOpt's
// hf_quant_config.json, or config.json's quantization_config in the ModelOpt,
// compressed-tensors or transformers "fp8" form), held to what tilejit runs:
// FP8 W8A8 with static per-tensor scales, or bf16. The projections' dtypes are
// cross-checked against it when a layer loads (LayerWeights.cpp).
#include "tilejit/models/nemotron_h/NemotronH.h"

#include "HuggingFaceJson.h"
#include "tilejit/support/InputFile.h"
#include "tilejit/support/Json.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

namespace tilejit::models {
namespace {

/// The error for a scheme tilejit does not run; `what` names it in the plural
/// ("NVFP4 projections (quant_algo NVFP4)").
llvm::Error unsupported(llvm::StringRef origin, const std::string &what) {
  return llvm::createStringError(
      "%s: %s are not supported: tilejit runs FP8 W8A8 projections with static "
      "per-tensor scales, and bf16 ones",
      origin.str().c_str(), what.c_str());
}

/// ModelOpt's quant_algo ("FP8", "NVFP4", "FP8_PER_CHANNEL_PER_TOKEN", ...).
llvm::Error checkModelOptAlgorithm(llvm::StringRef origin, llvm::StringRef algorithm) {
  if (algorithm == "FP8")
    return llvm::Error::success();
  const std::string upper = algorithm.upper();
  const llvm::StringRef name(upper);
  const std::string given = " (quant_algo " + algorithm.str() + ")";
  if (name.contains("NVFP4"))
    return unsupported(origin, "NVFP4 projections" + given);
  if (name.contains("MXFP4"))
    return unsupported(origin, "MXFP4 projections" + given);
  if (name.starts_with("FP8") && name.contains("PER_CHANNEL"))
    return unsupported(origin, "per-channel FP8 projections" + given);
  if (name.starts_with("FP8") && (name.contains("BLOCK") || name.contains("PB")))
    return unsupported(origin, "block-scaled FP8 projections" + given);
  return unsupported(origin, "projections quantized as " + algorithm.str() + given);
}

/// One compressed-tensors quantization group: its weights and input
/// activations must be 8-bit float with one static scale per tensor.
llvm::Error checkCompressedTensorsGroup(llvm::StringRef origin, llvm::StringRef group,
                                        const llvm::json::Object &scheme) {
  auto describe = [&](llvm::StringRef what) {
    return what.str() + " (compressed-tensors group " + group.str() + ")";
  };
  const llvm::json::Object *weights = scheme.getObject("weights");
  if (!weights)
    return unsupported(origin, describe("projections without weight quantization"));
  int64_t bits = weights->getInteger("num_bits").value_or(0);
  llvm::StringRef type = weights->getString("type").value_or("");
  llvm::StringRef strategy = weights->getString("strategy").value_or("");
  if (type == "int")
    return unsupported(origin, describe("INT" + std::to_string(bits) + " projections"));
  if (type == "float" && bits == 4)
    return unsupported(origin, describe("NVFP4 projections"));
  if (type != "float" || bits != 8)
    return unsupported(
        origin, describe(std::to_string(bits) + "-bit " + type.str() + " projections"));
  if (strategy == "channel")
    return unsupported(origin, describe("per-channel FP8 projections"));
  if (strategy == "block" || strategy == "group")
    return unsupported(origin, describe("block-scaled FP8 projections"));
  if (strategy != "tensor")
    return unsupported(origin, describe("FP8 projections with weight strategy '" +
                                        strategy.str() + "'"));
  const llvm::json::Object *inputs = scheme.getObject("input_activations");
  if (!inputs)
    return unsupported(origin, describe("weight-only FP8 projections"));
  if (inputs->getBoolean("dynamic").value_or(false))
    return unsupported(origin,
                       describe("FP8 projections with dynamic activation scales"));
  if (inputs->getString("strategy").value_or("") != "tensor" ||
      inputs->getInteger("num_bits").value_or(0) != 8 ||
      inputs->getString("type").value_or("") != "float")
    return unsupported(origin, describe("FP8 projections whose activations are not "
                                        "8-bit float with one scale per tensor"));
  return llvm::Error::success();
}

/// The bounds a `re:` pattern must keep before it reaches the regex compiler,
/// which recurses once per nested group and copies a group once per bounded
/// repetition: input-controlled depth or copies would exhaust the stack or the
/// memory. Real exclusion patterns ("re:.*mixer\.(in|out)_proj") are far inside.
constexpr size_t kMaxRegexLength = 1024;
constexpr int kMaxRegexDepth = 16, kMaxRegexRepetitions = 4;

/// Why `regex` is outside those bounds; empty when inside.
std::string regexBeyondBounds(llvm::StringRef regex) {
  if (regex.size() > kMaxRegexLength)
    return "it is " + std::to_string(regex.size()) + " characters long, over " +
           std::to_string(kMaxRegexLength);
  int depth = 0, deepest = 0, repetitions = 0;
  bool inBracket = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    if (c == '\\') {
      ++i; // an escaped character is a literal
    } else if (inBracket) {
      inBracket = c != ']';
    } else if (c == '[') {
      inBracket = true;
      if (i + 1 < regex.size() && regex[i + 1] == ']')
        ++i; // "[]...]": the first ']' is a member
    } else if (c == '(') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ')') {
      depth = std::max(depth - 1, 0);
    } else if (c == '{') {
      ++repetitions;
    }
  }
  if (deepest > kMaxRegexDepth)
    return "its groups nest " + std::to_string(deepest) + " deep, over " +
           std::to_string(kMaxRegexDepth);
  if (repetitions > kMaxRegexRepetitions)
    return "it has " + std::to_string(repetitions) +
           " bounded repetitions ({m,n}), over " + std::to_string(kMaxRegexRepetitions);
  return {};
}

/// The string entries of `value` (a list of module patterns; absent or null
/// is none), or an error.
llvm::Error readPatterns(llvm::StringRef origin, llvm::StringRef key,
                         const llvm::json::Value *value,
                         std::vector<std::string> &patterns) {
  if (!value || value->kind() == llvm::json::Value::Null)
    return llvm::Error::success();
  const llvm::json::Array *array = value->getAsArray();
  if (!array)
    return llvm::createStringError("%s: %s must be a list of module patterns, got %s",
                                   origin.str().c_str(), key.str().c_str(),
                                   support::jsonKindName(*value));
  for (const llvm::json::Value &entry : *array) {
    std::optional<llvm::StringRef> pattern = entry.getAsString();
    if (!pattern)
      return llvm::createStringError("%s: %s has an entry that is not a string",
                                     origin.str().c_str(), key.str().c_str());
    if (pattern->starts_with("re:")) {
      if (std::string why = regexBeyondBounds(pattern->drop_front(3)); !why.empty())
        return llvm::createStringError(
            "%s: %s entry '%s' is a regular expression tilejit does not compile: %s",
            origin.str().c_str(), key.str().c_str(),
            pattern->take_front(64)
                .str()
                .append(pattern->size() > 64 ? "..." : "")
                .c_str(),
            why.c_str());
      std::string error;
      if (!llvm::Regex(pattern->drop_front(3)).isValid(error))
        return llvm::createStringError(
            "%s: %s entry '%s' is not a regular expression: %s", origin.str().c_str(),
            key.str().c_str(), pattern->str().c_str(), error.c_str());
    } else if (auto glob = llvm::GlobPattern::create(*pattern); !glob) {
      return llvm::createStringError("%s: %s entry '%s' is not a pattern: %s",
                                     origin.str().c_str(), key.str().c_str(),
                                     pattern->str().c_str(),
                                     llvm::toString(glob.takeError()).c_str());
    }
    patterns.push_back(pattern->str());
  }
  return llvm::Error::success();
}

/// A quantization declaration in any of the three forms.
llvm::Expected<QuantizationConfig> parseDeclaration(llvm::StringRef origin,
                                                    const llvm::json::Object &root) {
  QuantizationConfig config;
  config.origin = origin.str();
  // ModelOpt: hf_quant_config.json's {"quantization": {...}}, or the same keys
  // at the top of quantization_config {"quant_method": "modelopt", ...}.
  llvm::StringRef method = root.getString("quant_method").value_or("modelopt");
  if (method == "modelopt") {
    const llvm::json::Object *body = root.getObject("quantization");
    if (!body)
      body = &root;
    const llvm::json::Value *algorithm = body->get("quant_algo");
    if (!algorithm)
      return llvm::createStringError("%s: no quant_algo", origin.str().c_str());
    // A null quant_algo quantizes no weight (only, say, the KV cache).
    if (algorithm->kind() == llvm::json::Value::Null)
      return QuantizationConfig{};
    std::optional<llvm::StringRef> name = algorithm->getAsString();
    if (!name)
      return llvm::createStringError("%s: quant_algo is not a string",
                                     origin.str().c_str());
    if (auto err = checkModelOptAlgorithm(origin, *name))
      return std::move(err);
    for (llvm::StringRef key : {"exclude_modules", "ignore"})
      if (auto err = readPatterns(origin, key, body->get(key), config.excluded))
        return std::move(err);
    return config;
  }
  if (method == "compressed-tensors") {
    const llvm::json::Object *groups = root.getObject("config_groups");
    if (!groups || groups->empty())
      return llvm::createStringError("%s: compressed-tensors without config_groups",
                                     origin.str().c_str());
    for (const auto &[group, scheme] : *groups) {
      const llvm::json::Object *object = scheme.getAsObject();
      if (!object)
        return llvm::createStringError("%s: config_groups.%s is not an object",
                                       origin.str().c_str(), group.str().c_str());
      if (auto err = checkCompressedTensorsGroup(origin, group, *object))
        return std::move(err);
    }
    if (auto err = readPatterns(origin, "ignore", root.get("ignore"), config.excluded))
      return std::move(err);
    return config;
  }
  if (method == "fp8") {
    const llvm::json::Value *block = root.get("weight_block_size");
    if (block && block->kind() != llvm::json::Value::Null)
      return unsupported(origin, "block-scaled FP8 projections (weight_block_size)");
    llvm::StringRef activations = root.getString("activation_scheme").value_or("dynamic");
    if (activations != "static")
      return unsupported(origin, "FP8 projections with " + activations.str() +
                                     " activation scales (activation_scheme)");
    for (llvm::StringRef key : {"ignored_layers", "modules_to_not_convert"})
      if (auto err = readPatterns(origin, key, root.get(key), config.excluded))
        return std::move(err);
    return config;
  }
  return unsupported(origin,
                     "projections quantized by quant_method '" + method.str() + "'");
}

bool matches(llvm::StringRef pattern, llvm::StringRef name) {
  if (pattern.starts_with("re:"))
    return llvm::Regex(("^(" + pattern.drop_front(3) + ")$").str()).match(name);
  auto glob = llvm::GlobPattern::create(pattern); // checked by readPatterns
  if (!glob) {
    llvm::consumeError(glob.takeError());
    return false;
  }
  return glob->match(name);
}

} // namespace

bool QuantizationConfig::excludes(llvm::StringRef module) const {
  for (const std::string &pattern : excluded) {
    // An excluded module excludes everything under it.
    for (llvm::StringRef name = module;;) {
      if (matches(pattern, name))
        return true;
      size_t dot = name.rfind('.');
      if (dot == llvm::StringRef::npos)
        break;
      name = name.take_front(dot);
    }
  }
  return false;
}

llvm::Expected<QuantizationConfig>
QuantizationConfig::read(llvm::StringRef dir,
                         const llvm::json::Object *quantizationConfig) {
  std::optional<QuantizationConfig> fromConfig;
  if (quantizationConfig) {
    llvm::SmallString<256> origin(dir);
    llvm::sys::path::append(origin, "config.json");
    auto parsed = parseDeclaration(origin.str().str() + " quantization_config",
                                   *quantizationConfig);
    if (!parsed)
      return parsed.takeError();
    fromConfig = std::move(*parsed);
  }
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "hf_quant_config.json");
  if (!llvm::sys::fs::exists(path))
    return fromConfig.value_or(QuantizationConfig{});
  // Both may be there (ModelOpt writes both); each must name a scheme tilejit
  // runs, and the file's exclusions are the ones that apply.
  auto buffer =
      support::readInputFile(path, "quantization config", support::kMaxConfigBytes);
  if (!buffer)
    return buffer.takeError();
  auto parsed = parseHuggingFaceJson(*buffer, path);
  if (!parsed)
    return parsed.takeError();
  return parseDeclaration(path, *parsed->getAsObject());
}

} // namespace tilejit::models
