// The SSD kernels' constants for tilejit.ops' callers (SsdChunk.cpp,
// SsdPrefill.cpp, SsdStatePass.cpp): their defaults are the plans' kernels, and
// a broken rule between them is refused naming it.
#include "KernelRefusal.h"
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <catch2/catch.hpp>

using namespace tilejit;

namespace {

const KernelRegistry &kernels() { return testing::registeredKernels(); }
using testing::refusal;

} // namespace

TEST_CASE("the SSD kernels' caller constants default to the plans' kernels",
          "[builder][ssd]") {
  for (llvm::StringRef kernel : {"ssd_prefill", "ssd_span_state"}) {
    const KernelDef *def = kernels().find(kernel);
    REQUIRE(def);
    Specialization spec = llvm::cantFail(def->specialize({}));
    // bf16 x, B, C and dt in one xBC row and the in_proj row; f32 A and dt_bias.
    CHECK(spec.get("x_type") == 0);
    CHECK(spec.get("bc_type") == 0);
    CHECK(spec.get("dt_type") == 0);
    CHECK(spec.get("a_type") == 2);
    CHECK(spec.get("dt_bias_type") == 2);
    CHECK(spec.get("split_xbc") == 0);
  }
  Specialization prefill = llvm::cantFail(kernels().find("ssd_prefill")->specialize({}));
  for (const char *flag : {"gate", "d_per_p", "page_out", "chunk_states"})
    CHECK(prefill.get(flag) == 0);
  CHECK(prefill.get("init_type") == 2);
  CHECK(prefill.get("state_type") == 2);
  CHECK(prefill.get("d_type") == 2);
  Specialization pass = llvm::cantFail(kernels().find("ssd_state_pass")->specialize({}));
  CHECK(pass.get("page_type") == 2);
  // Any state size: its tile is rounded up, the views mask the rest.
  auto odd = kernels().find("ssd_prefill")->specialize({{"state", 5}, {"head_dim", 5}});
  CHECK(bool(odd));
  if (!odd)
    llvm::consumeError(odd.takeError());
}

TEST_CASE("a broken rule between the SSD caller constants is refused naming it",
          "[builder][badinput][ssd]") {
  // One xBC row holds x, B and C in one element type.
  CHECK(refusal("ssd_prefill", {{"bc_type", 2}}) ==
        "kernel 'ssd_prefill': split_xbc = 0, bc_type = 2, x_type = 0 breaks the rule "
        "split_xbc or bc_type = x_type");
  CHECK(refusal("ssd_span_state", {{"split_xbc", 1}, {"x_stride", 100}}) ==
        "kernel 'ssd_span_state': x_stride = 100, heads = 64, head_dim = 64 breaks the "
        "rule x_stride is 0 or at least heads * head_dim");
  CHECK(refusal("ssd_prefill", {{"split_xbc", 1}, {"b_stride", 8}}) ==
        "kernel 'ssd_prefill': b_stride = 8, groups = 8, state = 128 breaks the rule "
        "b_stride is 0 or at least groups * state");
  CHECK(refusal("ssd_prefill", {{"gate", 1}, {"z_stride", 64}}) ==
        "kernel 'ssd_prefill': z_stride = 64, heads = 64, head_dim = 64 breaks the rule "
        "z_stride is 0 or at least heads * head_dim");
  // Without page_out the page is read and written: one element type.
  CHECK(
      refusal("ssd_prefill", {{"state_type", 0}}) ==
      "kernel 'ssd_prefill': page_out = 0, state_type = 0, init_type = 2 breaks the rule "
      "page_out or state_type = init_type (one page read and written)");
}
