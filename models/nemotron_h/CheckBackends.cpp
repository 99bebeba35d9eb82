// The GPU against the interpreter launch by launch (Check.h), and the planted
// defects that show the checks can fail.
#include "tilejit/models/nemotron_h/Check.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

namespace tilejit::models {
namespace {

/// A GEMM launch of the `out_proj` kernel (args: a, weight, out, rows[,
/// scale]) as the operands of a linear: the weight copied into a Projection
/// whose scale is the launch's output scale. A split one (k_splits > 1, args
/// a, weight, partials, rows; or tail_splits > 1, args a, weight, out,
/// partials, rows, tail) is the linear its split_k_sum `sum` (args partials,
/// out, rows[, tail][, scale]) completes.
struct GemmLaunch {
  Projection projection;
  LinearOperands ops;
  std::string output;
  int64_t rows = 0, columns = 0;
};

/// Whether an out_proj launch leaves f32 partials for a split_k_sum.
bool leavesPartials(const PlannedLaunch &launch) {
  return launch.kernel == "out_proj" &&
         (launch.spec.get("k_splits") > 1 || launch.spec.get("tail_splits") > 1);
}

llvm::Expected<GemmLaunch> gemmOf(const StepPlan &plan, const PlannedLaunch &launch,
                                  const PlannedLaunch &sum, const HostBuffers &inputs) {
  if (launch.kernel != "out_proj")
    return llvm::createStringError(llvm::formatv(
        "compare: layer {0} {1} ({2}) has reduced sums, but only the out_proj kernel's "
        "outputs have an R1h band here (a fused epilogue would need its propagation)",
        launch.layer, launch.role, launch.kernel));
  GemmLaunch g;
  const PlanBuffer &weight = plan.buffers.at(launch.args[1].buffer);
  const PlannedLaunch &epilogue = leavesPartials(launch) ? sum : launch;
  g.output = epilogue.args[epilogue.kernel == "out_proj" ? 2 : 1].buffer;
  g.columns = weight.shape[0];
  const int64_t k = weight.shape[1];
  g.rows = launch.args[launch.spec.get("tail_splits") > 1 ? 4 : 3].intValue;
  g.projection.isFP8 = weight.type == DType::F8E4M3;
  if (g.projection.isFP8) {
    g.projection.fp8Weight = Tensor<uint8_t>({g.columns, k});
    std::memcpy(g.projection.fp8Weight.data.data(), weight.hostWeight.data(),
                weight.hostWeight.size());
    g.projection.weightScale = float(epilogue.args.back().floatValue); // s_x * s_w
    g.ops.codes = Tensor<uint8_t>({g.rows, k});
    std::memcpy(g.ops.codes.data.data(), inputs.at(launch.args[0].buffer).data(),
                g.ops.codes.data.size());
  } else {
    g.projection.bf16Weight = Tensor<uint16_t>({g.columns, k});
    std::memcpy(g.projection.bf16Weight.data.data(), weight.hostWeight.data(),
                weight.hostWeight.size());
    g.ops.bf16 = Tensor<uint16_t>({g.rows, k});
    std::memcpy(g.ops.bf16.data.data(), inputs.at(launch.args[0].buffer).data(),
                g.ops.bf16.data.size() * 2);
  }
  return g;
}

Tensor<uint16_t> rowsOf(const std::vector<uint8_t> &bytes, int64_t rows,
                        int64_t columns) {
  Tensor<uint16_t> t({rows, columns});
  std::memcpy(t.data.data(), bytes.data(), t.data.size() * 2);
  return t;
}

} // namespace

bool BackendComparison::ok() const {
  bool good = !buffers.empty();
  for (const BufferAgreement &b : buffers)
    good &= b.outside == 0 && b.elements > 0;
  for (const ProjectionCheck &p : projections)
    good &= p.ok();
  return good;
}

void BackendComparison::print(llvm::raw_ostream &os) const {
  for (const BufferAgreement &b : buffers)
    os << llvm::formatv(
        "  layer {0,2} {1,-10} {2,-14} {3,-4} {4,9} elements, {5,9} identical, "
        "{6} outside (worst {7:f2})\n",
        b.layer, b.role, b.name, b.type, b.elements, b.identical, b.outside, b.maxError);
  for (const ProjectionCheck &p : projections)
    p.print(os);
}

llvm::Expected<BackendComparison> compareWithInterpreter(GpuRunner &gpu,
                                                         InterpreterRunner &interpreter,
                                                         HostBuffers buffers) {
  const StepPlan &plan = gpu.plan();
  if (auto err = gpu.upload(buffers))
    return std::move(err);
  BackendComparison result;
  std::optional<size_t> splitGemm;
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const PlannedLaunch &launch = plan.launches[i];
    HostBuffers cpu = buffers; // what the GPU held before this launch
    if (auto err = gpu.runLaunch(i))
      return std::move(err);
    if (auto err = gpu.download(buffers))
      return std::move(err);
    if (auto err = interpreter.runLaunch(plan, i, cpu))
      return std::move(err);
    const bool reduced = gpu.launchSums(i) == runtime::SumPrecision::Reduced;
    // A split GEMM's partials carry the reduced sums: its band is held at
    // its split_k_sum, which the interpreter then runs on the same partials.
    if (reduced && leavesPartials(launch)) {
      splitGemm = i;
      continue;
    }
    // After a split GEMM both sides sum the GPU's partials: the same bits,
    // and the reduced sums' band.
    const bool split = splitGemm.has_value();
    std::optional<GemmLaunch> gemm;
    if (reduced || split) {
      const PlannedLaunch &gemmLaunch = plan.launches[splitGemm.value_or(i)];
      splitGemm.reset();
      auto g = gemmOf(plan, gemmLaunch, launch, cpu);
      if (!g)
        return g.takeError();
      gemm.emplace(std::move(*g));
      gemm->ops.projection = &gemm->projection;
      const std::vector<bool> none(gemm->rows, false);
      std::string what = llvm::formatv("layer {0} {1}", launch.layer, launch.role).str();
      result.projections.push_back(
          checkProjection(what + " on the GPU", gemm->ops, {},
                          rowsOf(buffers.at(gemm->output), gemm->rows, gemm->columns),
                          none, runtime::SumPrecision::Reduced));
      result.projections.push_back(checkProjection(
          what + " on the interpreter", gemm->ops, {},
          rowsOf(cpu.at(gemm->output), gemm->rows, gemm->columns), none,
          split ? runtime::SumPrecision::Reduced : runtime::SumPrecision::Exact));
    }
    for (const auto &[name, bytes] : buffers) {
      const std::vector<uint8_t> &theirs = cpu.at(name);
      // The buffers the launch binds (inputs are the same bytes on both
      // sides); a reduced GEMM's output is held to the f64 of its codes above.
      if (gemm && !split && name == gemm->output)
        continue;
      const bool bound =
          launch.args.end() !=
          std::find_if(launch.args.begin(), launch.args.end(), [&](const PlanArg &a) {
            return a.kind == PlanArg::Kind::Buffer && a.buffer == name;
          });
      if (!bound || plan.buffers.at(name).role == PlanBuffer::Role::Input)
        continue;
      BufferAgreement a = compareBuffer(plan.buffers.at(name), bytes, theirs);
      a.launch = i;
      a.kernel = launch.kernel;
      a.role = launch.role;
      a.layer = launch.layer;
      a.name = name;
      result.buffers.push_back(std::move(a));
    }
  }
  return result;
}

llvm::StringRef defectName(Defect defect) {
  switch (defect) {
  case Defect::None:
    return "none";
  case Defect::DropKStep:
    return "drop-k-step";
  case Defect::ScaleColumn:
    return "scale-column";
  case Defect::DropInputScale:
    return "drop-input-scale";
  case Defect::DropCarry:
    return "drop-carry";
  }
  return "?";
}

llvm::Expected<Defect> parseDefect(llvm::StringRef name) {
  for (Defect d : {Defect::None, Defect::DropKStep, Defect::ScaleColumn,
                   Defect::DropInputScale, Defect::DropCarry})
    if (defectName(d) == name)
      return d;
  return llvm::createStringError(
      "unknown defect '" + name +
      "' (none, drop-k-step, scale-column, drop-input-scale or drop-carry)");
}

std::vector<MambaLayerWeights> plantWeightDefect(std::vector<MambaLayerWeights> layers,
                                                 Defect defect) {
  constexpr int64_t kDroppedK = 32;
  auto plant = [&](Projection &p) {
    if (defect == Defect::DropInputScale) {
      p.inputScale = 1.0f;
      return;
    }
    const int64_t rows = p.isFP8 ? p.fp8Weight.dim(0) : p.bf16Weight.dim(0);
    const int64_t k = p.isFP8 ? p.fp8Weight.dim(1) : p.bf16Weight.dim(1);
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t j = 0; j < k; ++j) {
        const size_t i = size_t(n * k + j);
        if (defect == Defect::DropKStep && j >= k - kDroppedK)
          p.isFP8 ? void(p.fp8Weight.data[i] = 0) : void(p.bf16Weight.data[i] = 0);
        if (defect == Defect::ScaleColumn && n == 0) // the first output's weights
          p.isFP8 ? void(p.fp8Weight.data[i] =
                             ref::e4m3Code(ref::e4m3Value(p.fp8Weight.data[i]) * 9 / 8))
                  : void(p.bf16Weight.data[i] =
                             ref::bf16Bits(ref::bf16Value(p.bf16Weight.data[i]) * 9 / 8));
      }
  };
  if (defect == Defect::DropKStep || defect == Defect::ScaleColumn ||
      defect == Defect::DropInputScale)
    for (MambaLayerWeights &w : layers) {
      plant(w.inProj);
      plant(w.outProj);
    }
  return layers;
}

StepFn plantCarryDefect(StepFn runStep, const StepPlan &plan, Defect defect) {
  if (defect != Defect::DropCarry)
    return runStep;
  return [runStep = std::move(runStep), &plan, first = true](HostBuffers &b) mutable {
    if (first)
      for (auto &[name, bytes] : b)
        if (plan.buffers.at(name).role == PlanBuffer::Role::State)
          std::fill(bytes.begin(), bytes.end(), 0);
    first = false;
    return runStep(b);
  };
}

} // namespace tilejit::models
