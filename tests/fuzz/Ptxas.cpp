// checkPtxAssembles: one ptxas run per PTX text, in the scratch directory.
#include "Ptxas.h"

#include "FuzzTargets.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace tilejit::fuzz {

void checkPtxAssembles(llvm::StringRef ptx, llvm::StringRef arch) {
  static const std::optional<std::string> ptxas = []() -> std::optional<std::string> {
    auto found = llvm::sys::findProgramByName("ptxas", {"/usr/local/cuda/bin"});
    if (!found) {
      std::fprintf(stderr, "tilejit-fuzz: no ptxas: emitted PTX is not assembled\n");
      return std::nullopt;
    }
    return *found;
  }();
  if (!ptxas)
    return;
  llvm::SmallString<256> input(scratchDir()), log(scratchDir());
  llvm::sys::path::append(input, "kernel.ptx");
  llvm::sys::path::append(log, "ptxas.log");
  writeFileOrDie(std::string(input), ptx);
  std::string archArg = ("-arch=" + arch).str();
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  std::string error;
  // No wait bound of LLVM's own: it would install its SIGALRM handler and end
  // with alarm(0), which cancels libFuzzer's -timeout timer for the rest of
  // the run (a hang would never be reported). A ptxas that hangs is that
  // timer's to report, as any slow input is.
  int rc = llvm::sys::ExecuteAndWait(
      *ptxas, {*ptxas, archArg, input.str(), "-o", "/dev/null"}, std::nullopt, redirects,
      /*SecondsToWait=*/0, /*MemoryLimit=*/0, &error);
  if (rc == 0)
    return;
  auto message = llvm::MemoryBuffer::getFile(log);
  std::fprintf(stderr,
               "tilejit-fuzz: ptxas -arch=%s refused the PTX (exit %d%s%s):\n%s\n%s\n",
               arch.str().c_str(), rc, error.empty() ? "" : ", ", error.c_str(),
               message ? (*message)->getBuffer().str().c_str() : "",
               ptx.take_front(4000).str().c_str());
  std::abort();
}

} // namespace tilejit::fuzz
