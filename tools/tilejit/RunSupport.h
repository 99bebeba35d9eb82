// `tilejit run`, shared by its modes: the parsed options and the printing of
// what the plan API returns. The modes (RunDecode.cpp, RunPrefill.cpp) only
// call the plan API and print; they know no kernel or buffer names.
#ifndef TILEJIT_TOOLS_TILEJIT_RUNSUPPORT_H
#define TILEJIT_TOOLS_TILEJIT_RUNSUPPORT_H

#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/models/plan/Timing.h"
#include "tilejit/runtime/Jit.h"
#include "tilejit/support/Timing.h"

#include <chrono>

namespace tilejit::cli {

/// The options of `tilejit run` after parsing (0: the mode's default).
struct RunOptions {
  int batch = 0, layers = 0, steps = 3, tokens = 0;
  bool stepsGiven = false;
  /// Batches (decode) whose step and kernels are timed; empty: none.
  std::vector<int> timeBatches;
  models::KernelOverrides overrides;
  /// A defect planted in what the backend runs (test-only): the checks must fail.
  models::Defect defect = models::Defect::None;
  /// --plan-arch: the arch whose device the plans are sized for.
  std::optional<Arch> planArch;
};

/// What a mode runs on: the config, the reference's weights and the weights the
/// backend runs (the same unless a defect is planted).
struct RunInputs {
  const KernelRegistry &registry;
  const models::NemotronHConfig &config;
  const std::vector<models::MambaLayerWeights> &weights, &backendWeights;
  const RunOptions &options;
};

int runDecodeInterpreter(const RunInputs &in);
int runDecodeGpu(const RunInputs &in, std::unique_ptr<runtime::DeviceApi> device);
int runPrefillInterpreter(const RunInputs &in);
int runPrefillGpu(const RunInputs &in, std::unique_ptr<runtime::DeviceApi> device);

using support::msSince;

/// The JIT runtime on `device` with the environment's options; says which
/// GPU and arch it compiles for. With `planArch` of another GPU's device: the
/// portable sm_90 target (sm_90 or sm_90a itself for a Hopper plan), every
/// kernel held to that device's shared memory.
llvm::Expected<std::unique_ptr<runtime::JitRuntime>>
openGpuRuntime(std::unique_ptr<runtime::DeviceApi> device,
               const std::optional<Arch> &planArch);
/// The arch a GPU run plans for: --plan-arch, else what `jit` compiles for.
Arch planArchOf(const RunOptions &options, const runtime::JitRuntime &jit);

/// The layers a GPU check runs: the first, and the first of the other
/// projection kind when there is one (an FP8 and a bf16 layer).
std::vector<size_t> checkedLayers(const std::vector<models::MambaLayerWeights> &w);
/// The weights of `indices`.
std::vector<models::MambaLayerWeights>
select(const std::vector<models::MambaLayerWeights> &w,
       const std::vector<size_t> &indices);

/// "sums: exact everywhere" or the launches with reduced sums.
void printSums(const models::GpuRunner &runner, llvm::raw_ostream &os);
/// One line per timed kernel: time, bytes, TB/s, its floor and the ratio.
void printKernelTimes(llvm::ArrayRef<models::KernelTime> times, llvm::StringRef what,
                      llvm::raw_ostream &os);
/// Prints a check's verdict line and details; returns its verdict.
bool printCheck(const models::StepCheck &check, llvm::StringRef headline, double ms,
                llvm::raw_ostream &os);

} // namespace tilejit::cli

#endif // TILEJIT_TOOLS_TILEJIT_RUNSUPPORT_H
