// Errors placed in a text a user handed tilejit, as llvm::json places its own:
// "[line:column, byte=N]: message". Shared by the JSON and IR text scans.
#ifndef TILEJIT_SUPPORT_LIB_TEXTPOSITION_H
#define TILEJIT_SUPPORT_LIB_TEXTPOSITION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace tilejit::support {

llvm::Error errorAt(llvm::StringRef text, size_t offset, const llvm::Twine &message);

} // namespace tilejit::support

#endif // TILEJIT_SUPPORT_LIB_TEXTPOSITION_H
