// NemotronHConfig: the geometry and layer pattern of docs/numerics.md#geometry, read
// from a Hugging Face config.json and checked before anything uses it.
#include "tilejit/models/nemotron_h/NemotronH.h"

#include "HuggingFaceJson.h"
#include "tilejit/support/InputFile.h"
#include "tilejit/support/Json.h"

#include <cmath>

namespace tilejit::models {
namespace {

/// Python's json writes non-finite floats as bare Infinity / -Infinity / NaN,
/// which strict JSON (and llvm::json) refuses; quote them so they parse.
std::string quoteNonFiniteLiterals(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (inString) {
      out += ch;
      if (ch == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (ch == '"')
        inString = false;
      continue;
    }
    if (ch == '"')
      inString = true;
    bool negative = ch == '-' && text.substr(i + 1).starts_with("Infinity");
    llvm::StringRef rest = text.substr(negative ? i + 1 : i);
    llvm::StringRef literal = rest.starts_with("Infinity") ? "Infinity"
                              : rest.starts_with("NaN")    ? "NaN"
                                                           : "";
    if (literal.empty()) {
      out += ch;
      continue;
    }
    out += (negative ? "\"-" : "\"") + literal.str() + "\"";
    i += literal.size() + (negative ? 1 : 0) - 1;
  }
  return out;
}

/// A JSON number, or a non-finite float spelled as a string ("Infinity") or as
/// transformers' {"__float__": "Infinity"}.
std::optional<double> floatOf(const llvm::json::Value &value) {
  if (auto number = value.getAsNumber())
    return number;
  std::optional<llvm::StringRef> text = value.getAsString();
  if (const llvm::json::Object *object = value.getAsObject())
    text = object->getString("__float__");
  if (!text)
    return std::nullopt;
  if (*text == "Infinity" || *text == "inf")
    return INFINITY;
  if (*text == "-Infinity" || *text == "-inf")
    return -INFINITY;
  return std::nullopt;
}

} // namespace

llvm::Expected<llvm::json::Value> parseHuggingFaceJson(llvm::StringRef text,
                                                       llvm::StringRef origin) {
  auto parsed = support::parseJson(quoteNonFiniteLiterals(text)); // nesting bounded
  if (!parsed)
    return llvm::createStringError("%s: invalid JSON: %s", origin.str().c_str(),
                                   llvm::toString(parsed.takeError()).c_str());
  if (!parsed->getAsObject())
    return llvm::createStringError("%s: the top level is not a JSON object",
                                   origin.str().c_str());
  return std::move(*parsed);
}

bool NemotronHConfig::isMambaLayer(int64_t layer) const {
  return layer >= 0 && layer < numLayers() && layerPattern[size_t(layer)] == 'M';
}

bool NemotronHConfig::hasBF16Projections(int64_t layer) const {
  return isMambaLayer(layer) && layer + 1 < numLayers() &&
         layerPattern[size_t(layer + 1)] == '*';
}

std::vector<int64_t> NemotronHConfig::mambaLayers() const {
  std::vector<int64_t> layers;
  for (int64_t i = 0; i < numLayers(); ++i)
    if (isMambaLayer(i))
      layers.push_back(i);
  return layers;
}

llvm::Error NemotronHConfig::validate() const {
  for (auto [name, value] : {std::pair{"hidden_size", hiddenSize},
                             {"mamba_num_heads", numHeads},
                             {"mamba_head_dim", headDim},
                             {"n_groups", numGroups},
                             {"ssm_state_size", stateSize},
                             {"conv_kernel", convKernel},
                             {"chunk_size", chunkSize}})
    if (value < 1)
      return llvm::createStringError("%s must be positive, got %lld", name,
                                     (long long)value);
  // What is derived from the sizes (intermediate(), inProjRows(), the element
  // counts of in_proj, out_proj and conv1d) must not overflow: config.json is
  // input like any other.
  int64_t inner, bc, channels, rows, elements;
  if (__builtin_mul_overflow(numHeads, headDim, &inner) ||
      __builtin_mul_overflow(numGroups, stateSize, &bc) ||
      __builtin_mul_overflow(bc, int64_t(2), &bc) ||
      __builtin_add_overflow(inner, bc, &channels) ||
      __builtin_add_overflow(inner, channels, &rows) ||
      __builtin_add_overflow(rows, numHeads, &rows) ||
      __builtin_mul_overflow(rows, hiddenSize, &elements) ||
      __builtin_mul_overflow(channels, convKernel, &elements))
    return llvm::createStringError(
        "the geometry's sizes overflow 64-bit integers (hidden_size %lld, "
        "mamba_num_heads %lld, mamba_head_dim %lld, n_groups %lld, ssm_state_size %lld, "
        "conv_kernel %lld)",
        (long long)hiddenSize, (long long)numHeads, (long long)headDim,
        (long long)numGroups, (long long)stateSize, (long long)convKernel);
  if (numHeads % numGroups != 0)
    return llvm::createStringError(
        "mamba_num_heads %lld is not a multiple of n_groups %lld", (long long)numHeads,
        (long long)numGroups);
  if ((chunkSize & (chunkSize - 1)) != 0)
    return llvm::createStringError("chunk_size %lld is not a power of two",
                                   (long long)chunkSize);
  // The kernels take eps and the dt' clamp as f32 scalars: each must stay
  // what it is there (a finite eps, a finite lower clamp; an infinite upper
  // clamp is no clamp, as the released config has it).
  if (!(eps > 0.0) || !std::isfinite(float(eps)) || float(eps) == 0.0f)
    return llvm::createStringError(
        "layer_norm_epsilon must be positive and finite in f32, got %g", eps);
  if (!(dtMin >= 0.0 && dtMin <= dtMax) || !std::isfinite(float(dtMin)))
    return llvm::createStringError("time_step_limit [%g, %g] is not a range in "
                                   "[0, inf) with a finite lower end",
                                   dtMin, dtMax);
  if (layerPattern.empty())
    return llvm::createStringError("the model has no layers (hybrid_override_pattern / "
                                   "layers_block_type is empty)");
  size_t bad = layerPattern.find_first_not_of("M*E-");
  if (bad != std::string::npos)
    return llvm::createStringError(
        "hybrid_override_pattern has unknown layer kind '%c' at layer %zu",
        layerPattern[bad], bad);
  return llvm::Error::success();
}

llvm::Expected<NemotronHConfig> NemotronHConfig::fromJson(llvm::StringRef text,
                                                          llvm::StringRef origin) {
  auto parsed = parseHuggingFaceJson(text, origin);
  if (!parsed)
    return parsed.takeError();
  const llvm::json::Object *root = parsed->getAsObject();
  auto missing = [&](llvm::StringRef key, const char *kind) {
    return llvm::createStringError("%s: missing %s '%s'", origin.str().c_str(), kind,
                                   key.str().c_str());
  };

  NemotronHConfig config;
  for (auto [key, field] : {std::pair{"hidden_size", &config.hiddenSize},
                            {"mamba_num_heads", &config.numHeads},
                            {"mamba_head_dim", &config.headDim},
                            {"ssm_state_size", &config.stateSize},
                            {"conv_kernel", &config.convKernel},
                            {"chunk_size", &config.chunkSize}}) {
    std::optional<int64_t> value = root->getInteger(key);
    if (!value)
      return missing(key, "integer");
    *field = *value;
  }
  std::optional<int64_t> groups = root->getInteger("n_groups");
  if (!groups)
    groups = root->getInteger("mamba_n_groups");
  if (!groups)
    return missing("n_groups", "integer");
  config.numGroups = *groups;
  std::optional<double> eps = root->getNumber("layer_norm_epsilon");
  if (!eps)
    return missing("layer_norm_epsilon", "number");
  config.eps = *eps;
  // The layer kinds: hybrid_override_pattern (one character per layer), or
  // layers_block_type (one name per layer) as current transformers saves the
  // config; when both are there they must agree.
  std::optional<llvm::StringRef> pattern = root->getString("hybrid_override_pattern");
  const llvm::json::Array *blockTypes = root->getArray("layers_block_type");
  if (!pattern && !blockTypes)
    return llvm::createStringError(
        "%s: missing the layer kinds: neither 'hybrid_override_pattern' nor "
        "'layers_block_type'",
        origin.str().c_str());
  const char *source = pattern ? "hybrid_override_pattern" : "layers_block_type";
  if (pattern)
    config.layerPattern = pattern->str();
  if (blockTypes) {
    std::string kinds;
    for (size_t i = 0; i < blockTypes->size(); ++i) {
      std::optional<llvm::StringRef> name = (*blockTypes)[i].getAsString();
      char kind = !name                  ? 0
                  : *name == "mamba"     ? 'M'
                  : *name == "attention" ? '*'
                  : *name == "moe"       ? 'E'
                  : *name == "mlp"       ? '-'
                                         : 0;
      if (!kind)
        return llvm::createStringError(
            "%s: layers_block_type[%zu] is %s, expected \"mamba\", \"attention\", "
            "\"moe\" or \"mlp\"",
            origin.str().c_str(), i,
            name ? ("\"" + name->str() + "\"").c_str() : "not a string");
      kinds += kind;
    }
    if (pattern && kinds != *pattern)
      return llvm::createStringError(
          "%s: hybrid_override_pattern '%s' disagrees with layers_block_type ('%s')",
          origin.str().c_str(), pattern->str().c_str(), kinds.c_str());
    config.layerPattern = kinds;
  }
  // num_hidden_layers is deprecated next to layers_block_type; when it is
  // there it must count the same layers.
  std::optional<int64_t> layers = root->getInteger("num_hidden_layers");
  if (layers && *layers != config.numLayers())
    return llvm::createStringError("%s: %s has %lld layers, num_hidden_layers says %lld",
                                   origin.str().c_str(), source,
                                   (long long)config.numLayers(), (long long)*layers);
  if (const llvm::json::Array *limit = root->getArray("time_step_limit")) {
    std::optional<double> lo = limit->size() == 2 ? floatOf((*limit)[0]) : std::nullopt;
    std::optional<double> hi = limit->size() == 2 ? floatOf((*limit)[1]) : std::nullopt;
    if (!lo || !hi)
      return llvm::createStringError("%s: time_step_limit is not a pair of numbers",
                                     origin.str().c_str());
    config.dtMin = *lo;
    config.dtMax = *hi;
  }
  if (auto err = config.validate())
    return llvm::createStringError("%s: %s", origin.str().c_str(),
                                   llvm::toString(std::move(err)).c_str());
  return config;
}

llvm::Expected<NemotronHConfig> NemotronHConfig::fromFile(llvm::StringRef path) {
  auto text = support::readInputFile(path, "config", support::kMaxConfigBytes);
  if (!text)
    return text.takeError();
  return fromJson(*text, path);
}

} // namespace tilejit::models
