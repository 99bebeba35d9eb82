// The PTX the fake device loads, read as the driver's JIT reads it (see
// FakePtx.h). The `.target` is PTX text, so its arch is parsed here, where
// the text arrives.
#include "FakePtx.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace tilejit::runtime {

Error driverError(const char *call, const char *name, const Twine &message) {
  return createStringError(inconvertibleErrorCode(),
                           call + Twine(": ") + name + " (fake device: " + message + ")");
}

/// The size of a PTX parameter type (".u64" -> 8), 0 when unknown.
static uint32_t ptxTypeSize(StringRef type) {
  if (type.consume_front(".")) {
    if (type == "pred")
      return 1;
    type = type.drop_while([](char c) { return isAlpha(c); });
    unsigned bits = 0;
    if (!type.getAsInteger(10, bits) && bits % 8 == 0)
      return bits / 8;
  }
  return 0;
}

Expected<std::vector<std::pair<std::string, std::vector<uint32_t>>>>
parseEntries(StringRef ptx) {
  std::vector<std::pair<std::string, std::vector<uint32_t>>> entries;
  for (size_t at = ptx.find(".entry"); at != StringRef::npos;
       at = ptx.find(".entry", at + 1)) {
    StringRef rest = ptx.substr(at + 6).ltrim();
    size_t open = rest.find('('), close = rest.find(')');
    if (open == StringRef::npos || close == StringRef::npos || close < open)
      return driverError("cuModuleLoadDataEx", "CUDA_ERROR_INVALID_PTX",
                         "an .entry without a parameter list");
    std::vector<uint32_t> sizes;
    SmallVector<StringRef> params;
    rest.slice(open + 1, close).split(params, ',', -1, /*KeepEmpty=*/false);
    for (StringRef param : params) {
      SmallVector<StringRef> tokens;
      SplitString(param, tokens);
      // ".param [.align N] .type [qualifiers] name[[count]]": a pointer
      // (.u64 .ptr .global .align 1 name) or a by-value array such as a tensor
      // map (.align 64 .b8 name[128]).
      if (tokens.size() >= 4 && tokens[1] == ".align")
        tokens.erase(tokens.begin() + 1, tokens.begin() + 3);
      ArrayRef<StringRef> rest = tokens;
      unsigned count = 1;
      if (rest.size() >= 3 && rest.back().ends_with("]")) {
        StringRef name = rest.back();
        size_t bracket = name.find('[');
        if (bracket == StringRef::npos ||
            name.slice(bracket + 1, name.size() - 1).getAsInteger(10, count) || !count)
          count = 0;
      }
      if (rest.size() < 3 || rest[0] != ".param" || !ptxTypeSize(rest[1]) || !count)
        return driverError("cuModuleLoadDataEx", "CUDA_ERROR_INVALID_PTX",
                           "unsupported parameter '" + param.trim() + "'");
      sizes.push_back(ptxTypeSize(rest[1]) * count);
    }
    entries.emplace_back(rest.take_front(open).rtrim().str(), std::move(sizes));
  }
  return entries;
}

std::optional<Arch> ptxTarget(StringRef ptx) {
  size_t targetAt = ptx.find(".target");
  if (targetAt == StringRef::npos)
    return std::nullopt;
  StringRef target = ptx.substr(targetAt + 7).ltrim().take_until([](char c) {
    return isSpace(c) || c == ',';
  });
  Expected<Arch> arch = Arch::parse(target);
  if (!arch) {
    consumeError(arch.takeError());
    return std::nullopt;
  }
  return *arch;
}

} // namespace tilejit::runtime
