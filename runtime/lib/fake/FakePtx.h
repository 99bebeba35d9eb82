// What the fake device reads from PTX, as the driver's JIT does: each entry's
// parameter sizes and the `.target`, and the errors the driver gives for PTX
// it cannot load.
#ifndef TILEJIT_RUNTIME_LIB_FAKE_FAKEPTX_H
#define TILEJIT_RUNTIME_LIB_FAKE_FAKEPTX_H

#include "tilejit/support/Arch.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilejit::runtime {

/// The error the driver would return, in Driver::check's format.
llvm::Error driverError(const char *call, const char *name, const llvm::Twine &message);

/// Every `.entry name(.param .type name, ...)` of `ptx`: its name and the byte
/// size of each parameter.
llvm::Expected<std::vector<std::pair<std::string, std::vector<uint32_t>>>>
parseEntries(llvm::StringRef ptx);

/// The arch the PTX's `.target` names; none when it names none tilejit knows.
std::optional<Arch> ptxTarget(llvm::StringRef ptx);

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_LIB_FAKE_FAKEPTX_H
