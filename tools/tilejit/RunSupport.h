// `tilejit run`, shared by its modes: the parsed options, the backend and model
// they run on (models/session: the same front door as the embedding API and
// Python), and the printing of what the plan API returns. The modes
// (RunDecode.cpp, RunPrefill.cpp) only call the plan API and print; they know no
// kernel or buffer names.
#ifndef TILEJIT_TOOLS_TILEJIT_RUNSUPPORT_H
#define TILEJIT_TOOLS_TILEJIT_RUNSUPPORT_H

#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/models/plan/Timing.h"
#include "tilejit/models/session/Session.h"
#include "tilejit/support/Timing.h"

namespace tilejit::cli {

using support::msSince;

/// The options of `tilejit run` after parsing (0: the mode's default).
struct RunOptions {
  int batch = 0, layers = 0, steps = 3, tokens = 0, slots = 0;
  bool stepsGiven = false;
  /// Print the step's plan and run nothing (--dry-run).
  bool dryRun = false;
  /// Batches (decode) whose step and kernels are timed; empty: none.
  std::vector<int> timeBatches;
  models::KernelOverrides overrides;
  /// The SSM pages' element type and rounding (--ssm-state-dtype,
  /// --stochastic-rounding).
  models::SsmStateOptions ssmState;
  /// A defect planted in what the backend runs (test-only): the checks must fail.
  models::Defect defect = models::Defect::None;
};

/// What a mode runs on: the backend, the reference's model and the model the
/// backend runs (the same unless a defect is planted).
struct RunInputs {
  std::shared_ptr<models::Backend> backend;
  std::shared_ptr<const models::LoadedModel> model, backendModel;
  const RunOptions &options;

  const models::NemotronHConfig &config() const { return model->config; }
  const std::vector<models::MambaLayerWeights> &weights() const { return model->weights; }
  /// A session over the backend's model restricted to `layers` (all when
  /// empty) with pages of `slots` slots and the run's --set overrides.
  llvm::Expected<std::unique_ptr<models::ModelSession>>
  session(int64_t slots, bool perLayerActivations,
          llvm::ArrayRef<size_t> layers = {}) const;
};

int runDecodeInterpreter(const RunInputs &in);
int runDecodeGpu(const RunInputs &in);
int runPrefillInterpreter(const RunInputs &in);
int runPrefillGpu(const RunInputs &in);

/// The layers a GPU check runs: the first, and the first of the other
/// projection kind when there is one (an FP8 and a bf16 layer).
std::vector<size_t> checkedLayers(const std::vector<models::MambaLayerWeights> &w);

/// "sums: exact everywhere" or the launches with reduced sums.
void printSums(const models::GpuRunner &runner, llvm::raw_ostream &os);
/// One line per timed kernel: time, bytes, TB/s, its floor and the ratio.
void printKernelTimes(llvm::ArrayRef<models::KernelTime> times, llvm::StringRef what,
                      llvm::raw_ostream &os);
/// Prints the sum of `plan`'s launches at their kinds' `times` (per layer of
/// `layers`) next to the measured step: the time between kernels.
void printKernelSum(const models::StepPlan &plan,
                    llvm::ArrayRef<models::KernelTime> times, double stepUs,
                    size_t layers, llvm::StringRef what, llvm::raw_ostream &os);
/// Prints a check's verdict line and details; returns its verdict.
bool printCheck(const models::StepCheck &check, llvm::StringRef headline, double ms,
                llvm::raw_ostream &os);

} // namespace tilejit::cli

#endif // TILEJIT_TOOLS_TILEJIT_RUNSUPPORT_H
