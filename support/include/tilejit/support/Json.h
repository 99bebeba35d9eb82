// JSON from files a user hands tilejit, parsed with two checks llvm::json
// lacks: its parser recurses once per nesting level with no limit (a file of a
// million '[' overflows the stack) and keeps the last of duplicate keys (a
// header naming one tensor twice would load whichever came last).
#ifndef TILEJIT_SUPPORT_JSON_H
#define TILEJIT_SUPPORT_JSON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

namespace tilejit::support {

/// Deeper than any configuration, index or database tilejit reads (config.json
/// nests about 5 levels).
inline constexpr unsigned kMaxJsonDepth = 64;

/// Parses `text`. Arrays and objects nested more than `maxDepth` deep, and a
/// key given twice in one object, are errors placed like llvm::json's own
/// ("[line:column, byte=N]: ..."), found by a scan before the parser runs.
llvm::Expected<llvm::json::Value> parseJson(llvm::StringRef text,
                                            unsigned maxDepth = kMaxJsonDepth);

/// What `value` is, for a message: "a string", "an array", "null", ...
const char *jsonKindName(const llvm::json::Value &value);

} // namespace tilejit::support

#endif // TILEJIT_SUPPORT_JSON_H
