// tilejit-opt: mlir-opt for the tile dialect, tilejit's passes and the test
// passes of its analyses (drives the lit tests).
// Files are read and written as the tilejit CLI does (docs/hardening.md): an input
// that is no regular file is refused, and a failed write is an error, not LLVM's
// fatal "IO failure on output stream".
#include "tilejit/Dialect/Tile/Transforms/TestPasses.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/support/InputFile.h"
#include "tilejit/support/IrText.h"
#include "tilejit/support/OutputFile.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace {

/// IR text larger than this is refused unread.
constexpr uint64_t kMaxIrBytes = 256ull << 20;

/// -debug and -debug-only, for the LLVM_DEBUG traces of tilejit's passes. An
/// LLVM built without assertions (Debian's) registers neither option, though
/// tilejit's own code keeps its traces (our build keeps assertions, so
/// LLVM_DEBUG is compiled in); these set llvm::DebugFlag and the debug types
/// as LLVM's own options do, and stand aside when LLVM has them.
void registerDebugOptions() {
  if (llvm::cl::getRegisteredOptions().count("debug-only"))
    return;
  static llvm::cl::opt<bool> debug(
      "debug", llvm::cl::desc("Print every LLVM_DEBUG trace"), llvm::cl::Hidden,
      llvm::cl::callback([](const bool &on) { llvm::DebugFlag |= on; }));
  static std::vector<std::string> types;
  static llvm::cl::list<std::string> debugOnly(
      "debug-only",
      llvm::cl::desc("Print the LLVM_DEBUG traces of these DEBUG_TYPEs (comma-separated, "
                     "e.g. tile-assign-layouts)"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("type"), llvm::cl::Hidden,
      llvm::cl::callback([](const std::string &type) {
        types.push_back(type);
        std::vector<const char *> names;
        for (const std::string &t : types)
          names.push_back(t.c_str());
        llvm::setCurrentDebugTypes(names.data(), names.size());
        llvm::DebugFlag = true;
      }));
}

int fail(llvm::Error err) {
  llvm::errs() << "tilejit-opt: error: " << llvm::toString(std::move(err)) << "\n";
  return 1;
}

/// The input: standard input for "-", else a regular file (a FIFO or device
/// would block or stream for ever).
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readInput(llvm::StringRef path) {
  if (path == "-") {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> in =
        llvm::MemoryBuffer::getSTDIN();
    if (!in)
      return llvm::createStringError(in.getError(), "cannot read standard input: " +
                                                        in.getError().message());
    return std::move(*in);
  }
  llvm::Expected<std::string> text =
      tilejit::support::readInputFile(path, "IR file", kMaxIrBytes);
  if (!text)
    return text.takeError();
  // The MLIR lexer relies on the NUL a MemoryBuffer copy ends with.
  return llvm::MemoryBuffer::getMemBufferCopy(*text, path);
}

/// The input, refused when it nests deeper than MLIR's recursion can take.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readCheckedInput(llvm::StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> input = readInput(path);
  if (!input)
    return input.takeError();
  if (llvm::Error err = tilejit::support::checkIrNesting((*input)->getBuffer()))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + llvm::Twine(": ") +
                                       llvm::toString(std::move(err)));
  return std::move(*input);
}

} // namespace

int main(int argc, char **argv) {
  registerDebugOptions();
  mlir::DialectRegistry registry;
  tilejit::registerCompilerDialects(registry);
  tilejit::registerCompilerPasses();
  tilejit::tile::registerTileTestPasses();
  auto [inputPath, outputPath] = mlir::registerAndParseCLIOptions(
      argc, argv, "tilejit optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  // Listing dialects or passes reads no input and writes no file.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputPath, outputPath, registry));

  llvm::InitLLVM init(argc, argv);
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> input = readCheckedInput(inputPath);
  if (!input)
    return fail(input.takeError());
  // The result is held until it is complete, then written and checked. As
  // mlir-opt does, a failed run still prints what it produced to standard
  // output (the splits before a failing one) but leaves no output file.
  std::string text;
  llvm::raw_string_ostream os(text);
  const bool ok =
      mlir::succeeded(mlir::MlirOptMain(os, std::move(*input), registry, config));
  int rc = ok ? 0 : 1;
  if (outputPath == "-")
    llvm::outs() << text;
  else if (ok)
    if (llvm::Error err = tilejit::support::writeOutputFile(outputPath, text, "output"))
      rc = fail(std::move(err));
  if (llvm::Error err = tilejit::support::finishStandardStreams())
    rc = fail(std::move(err));
  return rc;
}
