// ptxas, CUDA's assembler, as the tests' judge of PTX for arches no GPU here
// runs (sm_110a, sm_121a): does it assemble, and what does `ptxas -v` report
// (registers, spills). Header-only: the unit and e2e test binaries share it.
#ifndef TILEJIT_TESTS_SUPPORT_PTXAS_H
#define TILEJIT_TESTS_SUPPORT_PTXAS_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace tilejit::testing {

/// ptxas on the PATH, else CUDA's default install, else none.
inline std::optional<std::string> findPtxas() {
  if (auto onPath = llvm::sys::findProgramByName("ptxas"))
    return *onPath;
  if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/ptxas"))
    return std::string("/usr/local/cuda/bin/ptxas");
  return std::nullopt;
}

struct PtxasResult {
  int exitCode = -1;
  /// What ptxas printed (its diagnostics; with -v its resource report), or
  /// why it could not be run.
  std::string output;
  bool ok() const { return exitCode == 0; }
};

/// Assembles `ptx` with `ptxas -arch=<arch>` (and -v when `verbose`), bounded
/// by 120 s.
inline PtxasResult runPtxas(const std::string &ptxas, const std::string &ptx,
                            llvm::StringRef arch, bool verbose = false) {
  PtxasResult result;
  llvm::SmallString<128> input, cubin, log;
  if (llvm::sys::fs::createTemporaryFile("tilejit-ptxas", "ptx", input) ||
      llvm::sys::fs::createTemporaryFile("tilejit-ptxas", "cubin", cubin) ||
      llvm::sys::fs::createTemporaryFile("tilejit-ptxas", "log", log)) {
    result.output = "cannot create temporary files";
    return result;
  }
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(input, ec);
    os << ptx;
  }
  std::string archFlag = ("-arch=" + arch).str();
  llvm::SmallVector<llvm::StringRef, 6> args = {ptxas, archFlag};
  if (verbose)
    args.push_back("-v");
  args.append({"-o", cubin.str(), input.str()});
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string executeError;
  result.exitCode = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                              /*SecondsToWait=*/120, 0, &executeError);
  auto output = llvm::MemoryBuffer::getFile(log);
  result.output = executeError + (output ? (*output)->getBuffer().str() : "");
  for (const auto &path : {input, cubin, log})
    llvm::sys::fs::remove(path);
  return result;
}

/// Spill stores plus spill loads, in bytes, summed over what `ptxas -v`
/// reported ("N bytes spill stores, M bytes spill loads").
inline int64_t spillBytes(llvm::StringRef verboseOutput) {
  llvm::Regex spills("([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads");
  int64_t total = 0;
  llvm::SmallVector<llvm::StringRef, 3> match;
  llvm::StringRef rest = verboseOutput;
  while (spills.match(rest, &match)) {
    total += std::stoll(match[1].str()) + std::stoll(match[2].str());
    rest = rest.substr(match[0].end() - rest.begin());
  }
  return total;
}

} // namespace tilejit::testing

#endif // TILEJIT_TESTS_SUPPORT_PTXAS_H
