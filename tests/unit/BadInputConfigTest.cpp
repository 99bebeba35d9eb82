// A config.json whose sizes overflow what is derived from them is refused by
// validate() (found by the `config` fuzz target: hidden_size and
// mamba_num_heads of 2^62 overflowed intermediate() and inProjRows()).
#include "tilejit/models/nemotron_h/NemotronH.h"

#include <catch2/catch.hpp>

using namespace tilejit::models;

TEST_CASE("a config whose sizes overflow 64 bits is an error, not undefined behavior",
          "[checkpoint][badinput]") {
  const std::string big = "4611686018427387904"; // 2^62
  auto config = [&](const std::string &heads, const std::string &headDim) {
    return R"({"hidden_size": 32, "mamba_num_heads": )" + heads +
           R"(, "mamba_head_dim": )" + headDim +
           R"(, "n_groups": 2, "ssm_state_size": 8, "conv_kernel": 4, "chunk_size": 4,
              "layer_norm_epsilon": 1e-05, "hybrid_override_pattern": "M*M-",
              "num_hidden_layers": 4})";
  };
  auto error = [](const std::string &text) {
    auto parsed = NemotronHConfig::fromJson(text, "cfg");
    REQUIRE(!parsed);
    return llvm::toString(parsed.takeError());
  };
  // H * P overflows.
  CHECK(error(config(big, "4")) ==
        "cfg: the geometry's sizes overflow 64-bit integers (hidden_size 32, "
        "mamba_num_heads 4611686018427387904, mamba_head_dim 4, n_groups 2, "
        "ssm_state_size 8, conv_kernel 4)");
  // H * P fits, in_proj's element count (rows x hidden) does not.
  CHECK_THAT(error(config("2", "1152921504606846976")),
             Catch::StartsWith("cfg: the geometry's sizes overflow 64-bit integers"));
  // Large but representable sizes still pass validation.
  CHECK(bool(NemotronHConfig::fromJson(config("64", "1048576"), "cfg")));
}
