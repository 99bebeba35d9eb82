// The `ir` target: tile IR text as tilejit-opt reads it (with unregistered ops
// allowed, as the lit tests use them), parsed and verified; IR that verifies is
// printed and must parse and verify again. Seeds: the lit tests, one per
// `// -----` split, comment lines dropped.
#include "FuzzContext.h"
#include "FuzzTargets.h"

#include "tilejit/Dialect/Tile/IR/TileOps.h"
#include "tilejit/support/IrText.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace tilejit::fuzz {
namespace {

constexpr unsigned inputsPerContext = 2000;

/// The dialects of registerCompilerDialects (compiler/lib/Pipeline), which
/// tilejit-opt loads; listed here so the fuzzer links the dialect and not the
/// whole compiler. The PTX translation interfaces play no part in parsing.
std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  registry
      .insert<tile::TileDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
              mlir::scf::SCFDialect, mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect>();
  auto context = std::make_unique<mlir::MLIRContext>(
      registry, mlir::MLIRContext::Threading::DISABLED);
  context->allowUnregisteredDialects();
  context->loadAllAvailableDialects();
  return context;
}

mlir::OwningOpRef<mlir::ModuleOp> parse(mlir::MLIRContext &context,
                                        llvm::StringRef text) {
  return mlir::parseSourceString<mlir::ModuleOp>(text, mlir::ParserConfig(&context));
}

} // namespace

void runIr(llvm::ArrayRef<uint8_t> input) {
  static FuzzContext contexts(inputsPerContext, makeContext);
  mlir::MLIRContext *context = &contexts.next();
  // MLIR's lexer reads one byte past the text, which must be a NUL: files
  // (tilejit-opt) and std::string (the JIT) have it, libFuzzer's input does
  // not (parsing "t" in place was a heap-buffer-overflow in the lexer).
  const std::string text(reinterpret_cast<const char *>(input.data()), input.size());
  // As tilejit-opt reads its input: too deep a nesting is refused unparsed.
  if (llvm::Error err = support::checkIrNesting(text)) {
    llvm::consumeError(std::move(err));
    return;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = parse(*context, text);
  if (!module)
    return;
  std::string printed, generic;
  llvm::raw_string_ostream(printed) << *module;
  llvm::raw_string_ostream genericStream(generic);
  module->print(genericStream, mlir::OpPrintingFlags().printGenericOpForm());
  check(bool(parse(*context, printed)), "verified IR, printed, does not parse again");
  check(bool(parse(*context, generic)),
        "verified IR, printed generically, does not parse again");
}

Seeds irSeeds(llvm::StringRef sourceDir) {
  Seeds seeds;
  llvm::SmallString<256> litDir(sourceDir);
  llvm::sys::path::append(litDir, "tests", "lit");
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(litDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (llvm::sys::path::extension(it->path()) != ".mlir")
      continue;
    auto buffer = llvm::MemoryBuffer::getFile(it->path());
    if (!buffer)
      continue;
    std::string stem = llvm::sys::path::stem(it->path()).str();
    std::string current;
    unsigned split = 0;
    auto flush = [&] {
      if (current.find_first_not_of(" \n") != std::string::npos)
        seeds["lit-" + stem + "-" + std::to_string(split++) + ".mlir"] = current;
      current.clear();
    };
    llvm::SmallVector<llvm::StringRef> lines;
    (*buffer)->getBuffer().split(lines, '\n');
    for (llvm::StringRef line : lines) {
      llvm::StringRef trimmed = line.trim();
      if (trimmed.starts_with("// -----"))
        flush();
      else if (!trimmed.starts_with("//"))
        current += line.str() + "\n";
    }
    flush();
  }
  return seeds;
}

} // namespace tilejit::fuzz
