// The command-line form of an optional arch: an llvm::cl parser that turns the
// text into an Arch where it arrives (a tool's flag, a pass option, a pass
// pipeline option), so what lies beneath holds the value, never the name.
#ifndef TILEJIT_SUPPORT_ARCHOPTION_H
#define TILEJIT_SUPPORT_ARCHOPTION_H

#include "tilejit/support/Arch.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace llvm::cl {

/// Parses an exact arch name with Arch::parse (an unknown one is the option's
/// error, naming the known arches); an empty value is no arch.
template <>
class parser<std::optional<tilejit::Arch>>
    : public basic_parser<std::optional<tilejit::Arch>> {
public:
  parser(Option &option) : basic_parser(option) {}

  /// Returns true on error, as every llvm::cl parser does.
  bool parse(Option &option, StringRef argName, StringRef arg,
             std::optional<tilejit::Arch> &value);
  StringRef getValueName() const override { return "arch"; }
  void printOptionDiff(const Option &option, const std::optional<tilejit::Arch> &value,
                       const OptVal &defaultValue, size_t globalWidth) const;
  /// The name, or nothing for no arch: what parse reads back (MLIR prints a
  /// pass pipeline's options with it).
  static void print(raw_ostream &os, const std::optional<tilejit::Arch> &value);

  void anchor() override;
};

} // namespace llvm::cl

#endif // TILEJIT_SUPPORT_ARCHOPTION_H
