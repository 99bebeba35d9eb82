// Helpers of the interpreter unit tests: parse a kernel from MLIR text, run
// it, and draw random inputs.
#ifndef TILEJIT_TESTS_UNIT_INTERPRETERTESTUTIL_H
#define TILEJIT_TESTS_UNIT_INTERPRETERTESTUTIL_H

#include "tilejit/Interpreter/Interpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace tilejit::testing {

/// A kernel parsed from text, with the context and module that own it.
struct ParsedKernel {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  tile::KernelOp kernel;
};

/// Parses `text` (one module holding one tile.kernel); locations name
/// `fileName`.
inline ParsedKernel parseKernel(const std::string &text,
                                const std::string &fileName = "kernel.mlir") {
  ParsedKernel parsed;
  mlir::DialectRegistry registry;
  registry.insert<tile::TileDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect>();
  parsed.context = std::make_unique<mlir::MLIRContext>(registry);
  parsed.context->loadAllAvailableDialects();
  parsed.module = mlir::parseSourceString<mlir::ModuleOp>(
      text, mlir::ParserConfig(parsed.context.get()), fileName);
  REQUIRE(parsed.module);
  parsed.module->walk([&](tile::KernelOp k) { parsed.kernel = k; });
  REQUIRE(parsed.kernel);
  return parsed;
}

/// Compiles the kernel and fails the test on an error.
inline interp::CompiledKernel compileOrFail(tile::KernelOp kernel) {
  llvm::Expected<interp::CompiledKernel> compiled =
      interp::CompiledKernel::compile(kernel);
  if (!compiled)
    FAIL(llvm::toString(compiled.takeError()));
  return std::move(*compiled);
}

/// Runs the kernel and returns the error text, or "" on success.
inline std::string runKernel(const ParsedKernel &parsed, interp::Grid grid,
                             const std::vector<interp::Arg> &args) {
  llvm::Error err = interp::run(parsed.kernel, grid, args);
  return err ? llvm::toString(std::move(err)) : std::string();
}

/// Runs the kernel and fails the test on an error.
inline void runOrFail(const ParsedKernel &parsed, interp::Grid grid,
                      const std::vector<interp::Arg> &args) {
  std::string error = runKernel(parsed, grid, args);
  INFO(error);
  REQUIRE(error.empty());
}

/// `n` uniform floats in [lo, hi) from `rng`.
inline std::vector<float> randomFloats(std::mt19937 &rng, size_t n, float lo = -4.0f,
                                       float hi = 4.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (float &v : values)
    v = dist(rng);
  return values;
}

} // namespace tilejit::testing

#endif // TILEJIT_TESTS_UNIT_INTERPRETERTESTUTIL_H
