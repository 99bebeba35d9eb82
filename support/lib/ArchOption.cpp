// The llvm::cl parser of an optional arch (see ArchOption.h).
#include "tilejit/support/ArchOption.h"

namespace llvm::cl {

bool parser<std::optional<tilejit::Arch>>::parse(Option &option, StringRef argName,
                                                 StringRef arg,
                                                 std::optional<tilejit::Arch> &value) {
  if (arg.empty()) {
    value = std::nullopt;
    return false;
  }
  Expected<tilejit::Arch> arch = tilejit::Arch::parse(arg);
  if (!arch)
    return option.error(toString(arch.takeError()), argName);
  value = *arch;
  return false;
}

void parser<std::optional<tilejit::Arch>>::printOptionDiff(
    const Option &option, const std::optional<tilejit::Arch> &value, const OptVal &,
    size_t globalWidth) const {
  printOptionName(option, globalWidth);
  outs() << "= ";
  print(outs(), value);
  outs() << "\n";
}

void parser<std::optional<tilejit::Arch>>::print(
    raw_ostream &os, const std::optional<tilejit::Arch> &value) {
  if (value)
    os << value->name();
}

void parser<std::optional<tilejit::Arch>>::anchor() {}

} // namespace llvm::cl
