// compileToPTX on tile IR a caller hands it (the JIT's IR text, the `pipeline`
// fuzz target): parameters the pipeline adds itself, and parameters no launch
// can pass, are refused with a message, not left to the launch metadata.
#include "tilejit/Pipeline/Pipeline.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace tilejit;

namespace {

/// compileToPTX's error for `text`, one tile.kernel, for sm_90a.
std::string compileError(const char *text) {
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext context(dialects);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  REQUIRE(module);
  auto compiled = compileToPTX(*module, llvm::cantFail(Arch::parse("sm_90a")));
  REQUIRE_FALSE(bool(compiled));
  return llvm::toString(compiled.takeError());
}

} // namespace

TEST_CASE("compileToPTX refuses the parameters the pipeline appends itself",
          "[pipeline][badinput]") {
  // Both verify as IR (the pipeline's own output carries them); at compile
  // they tripped the asserts that the appended parameters come last.
  CHECK(compileError(R"mlir(
tile.kernel @k(%a: !tile.ptr<bf16>, %m: i32,
    %map: !tile.tensormap<[64, 64], bf16> {tile.tensormap_source = #tile.tensormap_source<base = 0, sizes = [-1, 64], size_args = [1, -1], strides = [64, 1]>})
    attributes {config = #tile.config<tile = [128], warps = 4>} {
  tile.return
})mlir") == "kernel 'k': parameter 2 is a !tile.tensormap; tensor maps are added by the "
            "pipeline (tile-warp-specialize) and built by the runtime, never passed in");
  CHECK(compileError(R"mlir(
tile.kernel @k(%a: !tile.ptr<bf16>, %m: i32 {tile.grid_dim = 0 : i64})
    attributes {config = #tile.config<tile = [128], warps = 4>} {
  tile.return
})mlir") == "kernel 'k': parameter 1 carries tile.grid_dim; the logical grid's sizes are "
            "added by the pipeline (tile-persistent) and filled by the runtime, never "
            "passed in");
}

TEST_CASE("compileToPTX refuses a parameter no launch can pass", "[pipeline][badinput]") {
  // The verifier takes an i1 parameter; no ParamKind holds one.
  CHECK(compileError(R"mlir(
tile.kernel @k(%a: !tile.ptr<f32> {tile.name = "a"}, %flag: i1 {tile.name = "flag"})
    attributes {config = #tile.config<tile = [128], warps = 4>} {
  tile.return
})mlir") ==
        "kernel 'k': parameter 1 ('flag') is i1, which a launch cannot pass (an i8 or "
        "i32 can hold it)");
}
