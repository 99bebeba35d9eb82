// Where a checkpoint's NemotronH tensors are: the prefix a wrapper puts in front
// of the Hugging Face names (a vision-language model's "language_model.", an
// exporter's "model."), found from the tensors themselves.
#ifndef TILEJIT_MODELS_NEMOTRONH_TENSORNAMES_H
#define TILEJIT_MODELS_NEMOTRONH_TENSORNAMES_H

#include "tilejit/models/nemotron_h/NemotronH.h"

namespace tilejit::models {

/// The prefix under which `names` hold the first Mamba layer of `config`
/// (`<prefix>backbone.layers.<i>.mixer.in_proj.weight`): empty for the
/// published names, else what precedes them, ending in '.'. No such tensor, or
/// tensors under more than one prefix, is an error that says what was looked
/// for and lists the names seen. A config without Mamba layers has no prefix.
llvm::Expected<std::string> findTensorPrefix(llvm::StringRef dir,
                                             const llvm::StringMap<size_t> &names,
                                             const NemotronHConfig &config);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_NEMOTRONH_TENSORNAMES_H
