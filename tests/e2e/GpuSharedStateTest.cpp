// GpuRunners that share a GpuSharedState, on the fake device: a decode and a
// prefill runner of the same layers upload each weight once, use one set of
// pages (the launches of both name the same page addresses), and a runner
// whose pages disagree in size with the shared ones is refused by name.
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/nemotron_h/Planner.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/runtime/Jit.h"

#include "llvm/Support/FormatVariadic.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

#include <set>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

std::unique_ptr<runtime::JitRuntime> fakeRuntime() {
  auto options = runtime::RuntimeOptions::fromEnvironment();
  REQUIRE(bool(options));
  options->useDiskCache = false;
  auto jit =
      runtime::JitRuntime::create(std::make_unique<runtime::FakeDevice>(),
                                  JitCompiler::fromEnvironment(), std::move(*options));
  REQUIRE(bool(jit));
  return std::move(*jit);
}

/// The device addresses of `plan`'s pages in `runner`.
std::set<runtime::DevicePtr> pageAddresses(const GpuRunner &runner) {
  std::set<runtime::DevicePtr> out;
  for (const auto &[name, buffer] : runner.plan().buffers)
    if (buffer.role == PlanBuffer::Role::State)
      out.insert(llvm::cantFail(runner.bufferAddress(name)));
  return out;
}

} // namespace

TEST_CASE("GPU runners sharing a GpuSharedState upload each weight once and carry one "
          "set of pages",
          "[e2e][decode][prefill][jit]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  PlanOptions options{{{"ssd_prefill", {{"block_p", 16}}}}};
  auto decodePlan = planDecodeStep(modelRegistry(), c, *layers, 2, 4);
  REQUIRE(bool(decodePlan));
  ref::PrefillBatch batch{{0, 9, 12}, {1, 3}, {false, true}};
  auto prefillPlan = planPrefill(modelRegistry(), c, *layers, batch, 12, 4, options);
  REQUIRE(bool(prefillPlan));

  auto jit = fakeRuntime();
  auto shared = std::make_shared<GpuSharedState>();
  std::string log;
  llvm::raw_string_ostream os(log);
  auto decoder = GpuRunner::create(*jit, modelRegistry(), *decodePlan, os, shared);
  INFO((decoder ? log : llvm::toString(decoder.takeError())));
  REQUIRE(bool(decoder));
  size_t weightBytes = 0;
  for (const auto &[name, buffer] : decodePlan->buffers)
    weightBytes += buffer.role == PlanBuffer::Role::Weight ? buffer.bytes : 0;
  CHECK(jit->stats().snapshot().bytesUploaded == weightBytes);
  CHECK(shared->slots.size() == 2);
  CHECK(shared->pages.size() == 4); // conv and SSM pages of two layers

  auto prefiller =
      GpuRunner::create(*jit, modelRegistry(), prefillPlan->plan, os, shared);
  INFO((prefiller ? log : llvm::toString(prefiller.takeError())));
  REQUIRE(bool(prefiller));
  // The prefill plan names the same weights: nothing more went up.
  CHECK(jit->stats().snapshot().bytesUploaded == weightBytes);
  CHECK(shared->pages.size() == 4);
  CHECK(pageAddresses(**decoder) == pageAddresses(**prefiller));
  CHECK(pageAddresses(**decoder).size() == 4);

  // A runner of its own uploads its own copy and allocates its own pages.
  auto alone = GpuRunner::create(*jit, modelRegistry(), *decodePlan, os);
  REQUIRE(bool(alone));
  CHECK(jit->stats().snapshot().bytesUploaded == 2 * weightBytes);
  std::set<runtime::DevicePtr> own = pageAddresses(**alone), common;
  for (runtime::DevicePtr p : pageAddresses(**decoder))
    if (own.count(p))
      common.insert(p);
  CHECK(common.empty());

  // Pages of five slots cannot be the shared pages of four.
  auto wider = planDecodeStep(modelRegistry(), c, *layers, 2, 5);
  REQUIRE(bool(wider));
  auto refused = GpuRunner::create(*jit, modelRegistry(), *wider, os, shared);
  REQUIRE(!refused);
  const size_t convPage4 = size_t(4) * c.convChannels() * 3 * 2;
  const size_t convPage5 = size_t(5) * c.convChannels() * 3 * 2;
  CHECK(llvm::toString(refused.takeError()) ==
        llvm::formatv("plan: page 'l0.conv_page' has {0} bytes in the shared state, the "
                      "plan expects {1}",
                      convPage4, convPage5)
            .str());
}
