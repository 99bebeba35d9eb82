// errorAt (TextPosition.h).
#include "TextPosition.h"

#include "llvm/Support/FormatVariadic.h"

namespace tilejit::support {

llvm::Error errorAt(llvm::StringRef text, size_t offset, const llvm::Twine &message) {
  size_t line = 1, lineStart = 0;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n')
      ++line, lineStart = i + 1;
  return llvm::createStringError(
      std::make_error_code(std::errc::invalid_argument),
      llvm::formatv("[{0}:{1}, byte={2}]: ", line, offset - lineStart, offset) + message);
}

} // namespace tilejit::support
