// checkIrNesting (IrText.h): one linear scan, string literals and line
// comments skipped whole so brackets inside them do not count.
#include "tilejit/support/IrText.h"
#include "TextPosition.h"

#include "llvm/Support/FormatVariadic.h"

namespace tilejit::support {

llvm::Error checkIrNesting(llvm::StringRef text, unsigned maxDepth) {
  unsigned depth = 0;
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '"') {
      while (++i < n && text[i] != '"')
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      i = std::min(text.find('\n', i), n);
    } else if (c == '{' || c == '(' || c == '[' || c == '<') {
      if (++depth > maxDepth)
        return errorAt(text, i,
                       llvm::formatv("IR nests deeper than {0} levels", maxDepth));
    } else if (c == '}' || c == ')' || c == ']' ||
               (c == '>' && (i == 0 || text[i - 1] != '-'))) {
      // An unbalanced closer is the parser's to report; it never goes below 0.
      depth = depth ? depth - 1 : 0;
    }
  }
  return llvm::Error::success();
}

} // namespace tilejit::support
