// `tilejit run`: the NemotronH Mamba2 decode kernels on a checkpoint or on the
// embedded synthetic weights, checked against the f64 reference, with compile
// and run times. This build runs them on the interpreter; the GPU backend and
// the fused mixer step arrive with the runtime (issue 4) and decode (issue 6).
#include "Commands.h"

#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/Support/FloatFormats.h"
#include "tilejit/models/NemotronH.h"
#include "tilejit/models/Reference.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>

using namespace llvm;
using namespace tilejit;
using models::Tensor;

namespace {

cl::SubCommand runCmd("run", "Run the NemotronH Mamba2 decode kernels and check them "
                             "against the f64 reference");
cl::opt<std::string> modelDir("model", cl::desc("Checkpoint folder (config.json + "
                                                "safetensors); default: synthetic weights"),
                              cl::sub(runCmd));
cl::opt<std::string> mode("mode", cl::desc("decode|prefill"), cl::init("decode"),
                          cl::sub(runCmd));
cl::opt<int> batch("batch", cl::desc("Sequences (rows) per step"), cl::init(1),
                   cl::sub(runCmd));
cl::opt<int> layers("layers", cl::desc("Mamba layers"), cl::init(1), cl::sub(runCmd));
cl::opt<std::string> backend("backend", cl::desc("interp|gpu"), cl::init("interp"),
                             cl::sub(runCmd));

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Largest difference of `got` (bf16 bits) from the f64 `want`, in bf16 ulps
/// of `want`, and the number of elements compared.
std::pair<double, size_t> ulpError(ArrayRef<uint16_t> got, ArrayRef<double> want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double ulp = std::ldexp(1.0, std::ilogb(std::max(std::abs(want[i]), 0x1p-126)) - 7);
    worst = std::max(worst, std::abs(double(bf16ToF32(got[i])) - want[i]) / ulp);
  }
  return {worst, got.size()};
}

struct KernelRun {
  std::string name;
  double buildMs = 0, runMs = 0, worstUlp = 0;
  size_t checked = 0;
};

/// Builds `name` with its default constants and runs it on the interpreter.
Expected<KernelRun> interpret(const KernelRegistry &registry, StringRef name,
                              interp::Grid grid, std::vector<interp::Arg> args) {
  KernelRun run{name.str()};
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  const KernelDef *def = registry.find(name);
  auto start = std::chrono::steady_clock::now();
  auto module = def->build(ctx, cantFail(def->specialize({})));
  if (!module)
    return module.takeError();
  auto compiled =
      interp::CompiledKernel::compile(*(*module)->getOps<tile::KernelOp>().begin());
  if (!compiled)
    return compiled.takeError();
  run.buildMs = msSince(start);
  start = std::chrono::steady_clock::now();
  if (Error err = compiled->run(grid, args))
    return std::move(err);
  run.runMs = msSince(start);
  return run;
}

} // namespace

namespace tilejit::cli {

bool runRequested() { return bool(runCmd); }

int runMain(const KernelRegistry &registry) {
  if (backend != "interp")
    return fail("backend '" + backend + "' is not available in this build: the GPU "
                "runtime (issue 4) is not wired into `tilejit run` yet; use --backend interp");
  if (mode != "decode")
    return fail("mode '" + mode + "' is not available yet (prefill arrives with issue 7)");
  if (batch < 1 || layers < 1)
    return fail("--batch and --layers must be at least 1");

  models::NemotronHConfig config;
  std::vector<models::MambaLayerWeights> weights;
  auto start = std::chrono::steady_clock::now();
  if (modelDir.empty()) {
    auto synthetic = models::syntheticMambaLayers(config, layers);
    if (!synthetic)
      return fail(toString(synthetic.takeError()));
    weights = std::move(*synthetic);
    outs() << formatv("weights: embedded synthetic NemotronH geometry, {0} Mamba layer(s)\n",
                      layers);
  } else {
    auto checkpoint = models::NemotronHCheckpoint::open(modelDir);
    if (!checkpoint)
      return fail(toString(checkpoint.takeError()));
    config = checkpoint->config();
    std::vector<int64_t> mamba = config.mambaLayers();
    for (int i = 0; i < layers && i < (int)mamba.size(); ++i) {
      auto layer = checkpoint->loadMambaLayer(mamba[i]);
      if (!layer)
        return fail(toString(layer.takeError()));
      weights.push_back(std::move(*layer));
    }
    outs() << formatv("weights: {0}, {1} Mamba layer(s)\n", modelDir, weights.size());
  }
  outs() << formatv("load {0:f1} ms; backend interp (CPU), batch {1}\n", msSince(start),
                    batch);

  const int64_t channels = config.convChannels(), width = config.intermediate();
  const int64_t group = config.normGroupSize();
  models::Rng rng(42);
  bool ok = true;
  for (const models::MambaLayerWeights &layer : weights) {
    // R3d: one token per row through the conv; slots 0..B-1 of a zeroed page.
    Tensor<uint16_t> xt = models::randomBF16({batch, channels}, rng, -2, 2);
    Tensor<uint16_t> page = models::randomBF16({batch, channels, 3}, rng, -2, 2);
    Tensor<uint16_t> refPage = page;
    std::vector<int32_t> slots(batch);
    std::vector<int64_t> slots64(batch);
    for (int b = 0; b < batch; ++b)
      slots[b] = slots64[b] = b;
    std::vector<uint16_t> convOut(batch * channels);
    auto conv = interpret(registry, "conv_update", {batch, channels / 256, 1},
                          {interp::Arg::readOnlyBuffer(xt.data), interp::Arg::buffer(page.data),
                           interp::Arg::readOnlyBuffer(slots),
                           interp::Arg::readOnlyBuffer(layer.convWeight.data),
                           interp::Arg::readOnlyBuffer(layer.convBias.data),
                           interp::Arg::buffer(convOut)});
    if (!conv)
      return fail(toString(conv.takeError()));
    auto convRef = models::ref::convUpdatePaged(xt, layer.convWeight, layer.convBias, slots64,
                                                refPage);
    if (!convRef)
      return fail(toString(convRef.takeError()));
    std::tie(conv->worstUlp, conv->checked) = ulpError(convOut, convRef->data);
    bool stateOk = page.data == refPage.data;

    // R6: the gated norm of random y, z with the layer's norm weight.
    Tensor<uint16_t> y = models::randomBF16({batch, width}, rng, -2, 2);
    Tensor<uint16_t> z = models::randomBF16({batch, width}, rng, -2, 2);
    std::vector<uint16_t> normOut(batch * width);
    auto norm = interpret(registry, "gated_rmsnorm", {batch, width / group, 1},
                          {interp::Arg::readOnlyBuffer(y.data), interp::Arg::readOnlyBuffer(z.data),
                           interp::Arg::readOnlyBuffer(layer.normWeight.data),
                           interp::Arg::buffer(normOut), interp::Arg::intScalar(batch),
                           interp::Arg::floatScalar(config.eps)});
    if (!norm)
      return fail(toString(norm.takeError()));
    auto normRef = models::ref::gatedRmsNorm(y, z, layer.normWeight, group, config.eps);
    if (!normRef)
      return fail(toString(normRef.takeError()));
    std::tie(norm->worstUlp, norm->checked) = ulpError(normOut, normRef->data);

    // Both outputs are bf16 roundings of an f32 computation of the f64 value:
    // within 1 bf16 ulp (the band of reference-math.md R3/R6 is wider).
    for (KernelRun *k : {&*conv, &*norm}) {
      bool pass = k->worstUlp <= 1.0;
      ok &= pass;
      outs() << formatv("layer {0,2} {1,-14} build {2,7:f1} ms  run {3,8:f1} ms  "
                        "{4} elements, max error {5:f2} bf16 ulp  {6}\n",
                        layer.layer, k->name, k->buildMs, k->runMs, k->checked, k->worstUlp,
                        pass ? "PASS" : "FAIL");
    }
    outs() << formatv("layer {0,2} conv state page: {1}\n", layer.layer,
                      stateOk ? "byte-identical to the reference PASS" : "differs FAIL");
    ok &= stateOk;
  }
  outs() << (ok ? "all checks passed\n" : "some checks FAILED\n");
  return ok ? 0 : 1;
}

} // namespace tilejit::cli
