// MLIR text a user hands tilejit (tilejit-opt's input, the fuzzers' IR),
// checked before MLIR's parser sees it: the parser, the verifier and the
// printer recurse once per nesting level with no limit, so IR nested a few
// thousand deep overflows the stack. Depends on LLVMSupport only.
#ifndef TILEJIT_SUPPORT_IRTEXT_H
#define TILEJIT_SUPPORT_IRTEXT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace tilejit::support {

/// Far deeper than any kernel (a tile kernel nests regions, op lists and
/// types about ten levels), far shallower than the ~3,000 levels at which an
/// 8 MiB stack overflows in MLIR's recursion.
inline constexpr unsigned kMaxIrDepth = 256;

/// An error placed at the first bracket ('{', '(', '[' or '<', outside string
/// literals and comments; '->' is no bracket) that opens level maxDepth + 1.
llvm::Error checkIrNesting(llvm::StringRef text, unsigned maxDepth = kMaxIrDepth);

} // namespace tilejit::support

#endif // TILEJIT_SUPPORT_IRTEXT_H
