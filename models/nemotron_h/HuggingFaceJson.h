// Parsing the JSON files of a Hugging Face checkpoint (config.json,
// hf_quant_config.json), shared by the config and quantization readers.
#ifndef TILEJIT_MODELS_NEMOTRONH_HUGGINGFACEJSON_H
#define TILEJIT_MODELS_NEMOTRONH_HUGGINGFACEJSON_H

#include "llvm/Support/JSON.h"

namespace tilejit::models {

/// Parses `text` as a JSON object; Python's bare Infinity / -Infinity / NaN
/// literals are accepted (as strings). `origin` names the file in errors.
llvm::Expected<llvm::json::Value> parseHuggingFaceJson(llvm::StringRef text,
                                                       llvm::StringRef origin);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_NEMOTRONH_HUGGINGFACEJSON_H
