// What the model e2e tests share: the registry of model kernels, host bytes
// of a vector, the small NemotronH geometry the plans are tested at, the text
// of a check's report, and a tuning database entry as `tilejit tune` records it.
#ifndef TILEJIT_TESTS_E2E_MODELTESTSUPPORT_H
#define TILEJIT_TESTS_E2E_MODELTESTSUPPORT_H

#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/models/nemotron_h/NemotronH.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/runtime/Jit.h"
#include "tilejit/tuning/TunedLookup.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

namespace tilejit::models::testing {

/// Saves at `path` a tuning database holding the entry `tilejit tune
/// in_proj_conv --shape rows=1` would record for `def` at `base` (tunables at
/// their defaults) on `jit`'s device and build: block_n 32, warps 2, which
/// no plan picks by itself.
inline llvm::Error saveInProjConvEntry(runtime::JitRuntime &jit, const KernelDef &def,
                                       const Specialization &base, llvm::StringRef path) {
  auto key = tuning::tuneKeyFor(jit, {&def, nullptr, base, {{"rows", 1}}});
  if (!key)
    return key.takeError();
  tuning::TuneEntry entry;
  entry.key = *key;
  entry.config = {{"block_n", 32}, {"warps", 2}};
  entry.medianMs = 0.01;
  entry.defaultMedianMs = 0.02;
  entry.provenance.date = "2026-11-30T00:00:00Z";
  entry.provenance.device = "test";
  tuning::TuneDb db;
  db.record(entry);
  return db.save(path);
}

/// The model kernels (registerModelKernels), registered once.
inline const KernelRegistry &modelRegistry() {
  static KernelRegistry r = [] {
    KernelRegistry reg;
    llvm::cantFail(registerModelKernels(reg));
    return reg;
  }();
  return r;
}

/// Builds `name` of `registry` with `constants` and runs it on the
/// interpreter over `grid`; the interpreter's error, if any, fails the test.
inline void runOnInterpreter(const KernelRegistry &registry, llvm::StringRef name,
                             const ConstantValues &constants, interp::Grid grid,
                             std::vector<interp::Arg> args) {
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  const KernelDef *def = registry.find(name);
  REQUIRE(def);
  auto module = def->build(ctx, llvm::cantFail(def->specialize(constants)));
  REQUIRE(bool(module));
  auto kernel = *(*module)->getOps<tile::KernelOp>().begin();
  llvm::Error err = interp::run(kernel, grid, args);
  INFO(name.str() << ": " << llvm::toString(std::move(err)));
  REQUIRE(!err);
}

/// A small NemotronH whose layer 0 has FP8 projections and layer 1 bf16 ones
/// (an attention layer follows it), with geometry the tiles divide unevenly:
/// in_proj's K of 200 is 1.6 steps of 128, its 392 outputs 24.5 decode
/// programs of 16 and 3.1 prefill tiles of 128; out_proj's K of 128 half a
/// step of 256.
inline NemotronHConfig smallConfig() {
  NemotronHConfig c;
  c.hiddenSize = 200;
  c.numHeads = 8;
  c.headDim = 16;
  c.numGroups = 2;
  c.stateSize = 32;
  c.layerPattern = "MM*";
  return c;
}

/// Two small layers with their projections mixed within each layer: layer 0
/// an FP8 in_proj and a bf16 out_proj (as some layers of the larger published
/// NemotronH checkpoints have), layer 1 the reverse.
inline std::vector<MambaLayerWeights> mixedProjectionLayers(const NemotronHConfig &c) {
  std::vector<MambaLayerWeights> layers = llvm::cantFail(syntheticMambaLayers(c, 2));
  std::swap(layers[0].outProj, layers[1].outProj);
  return layers;
}

/// What `check` prints, for INFO() next to its verdict.
inline std::string reportOf(const StepCheck &check) {
  std::string report;
  llvm::raw_string_ostream os(report);
  check.print(os);
  return report;
}

/// The verdict of a decode check of `steps` carried steps at `rows` rows:
/// every output checked and within its band, every projection band
/// separating from its counterfactual, padding rows zero, the slots no row
/// names byte-identical.
inline void requireDecodeCheck(const StepCheck &check, int64_t steps, int64_t rows,
                               int64_t hidden) {
  INFO(reportOf(check));
  CHECK(check.ok());
  CHECK(check.outChecked == steps * rows * hidden);
  for (const ProjectionCheck &p : check.projections) {
    INFO(p.what);
    CHECK(p.outside == 0);
    CHECK(p.separates());
  }
  CHECK(check.outBad == 0);
  CHECK(check.paddingNonZero == 0);
  CHECK(check.untouchedSlotsDiffering == 0);
}

/// A packed batch of sequences of `lengths` tokens in `slots` (negative:
/// padding), each continuing from its slot where `carry` says so.
inline ref::PrefillBatch makeBatch(llvm::ArrayRef<int64_t> lengths,
                                   llvm::ArrayRef<int64_t> slots,
                                   std::vector<bool> carry) {
  ref::PrefillBatch batch{{0}, slots.vec(), std::move(carry)};
  for (int64_t l : lengths)
    batch.cuSeqlens.push_back(batch.cuSeqlens.back() + l);
  return batch;
}

/// A runtime on the fake device (no disk cache) whose tuning database is
/// tune.json in a folder of its own, removed with it.
struct FakeTunedRuntime {
  llvm::SmallString<128> dir;
  std::string tuneDbPath;
  std::unique_ptr<runtime::JitRuntime> jit;

  FakeTunedRuntime() {
    REQUIRE(!llvm::sys::fs::createUniqueDirectory("tilejit-tunedb", dir));
    auto options = runtime::RuntimeOptions::fromEnvironment();
    REQUIRE(bool(options));
    options->useDiskCache = false;
    options->tuneDbPath = tuneDbPath = (dir + "/tune.json").str();
    jit = llvm::cantFail(
        runtime::JitRuntime::create(std::make_unique<runtime::FakeDevice>(),
                                    JitCompiler::fromEnvironment(), *options));
  }
  ~FakeTunedRuntime() { llvm::sys::fs::remove_directories(dir); }
};

} // namespace tilejit::models::testing

#endif // TILEJIT_TESTS_E2E_MODELTESTSUPPORT_H
