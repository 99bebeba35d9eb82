// TensorMapSpec (support/TensorMap.h): the ten-integer form cache entries
// store round-trips; a spec the hardware cannot copy, or text that is not
// one, is refused with the number that is wrong.
#include "tilejit/support/TensorMap.h"

#include <catch2/catch.hpp>

using tilejit::TensorMapSpec;

namespace {
std::string refusal(llvm::StringRef text) {
  auto spec = TensorMapSpec::parse(text);
  REQUIRE(!spec);
  return llvm::toString(spec.takeError());
}
} // namespace

TEST_CASE("a tensor map spec round-trips through its text", "[support][tma]") {
  // a.tensormap of gemm_e4m3: base parameter 0, rows from parameter 3,
  // 2688 columns, 128 x 128 boxes of bytes.
  auto spec = TensorMapSpec::parse("5,0,-1,3,2688,-1,2688,128,128,1");
  REQUIRE(!!spec);
  CHECK(spec->param == 5);
  CHECK(spec->base == 0);
  CHECK(spec->sizes == std::array<int64_t, 2>{-1, 2688});
  CHECK(spec->sizeArgs == std::array<int32_t, 2>{3, -1});
  CHECK(spec->rowStride == 2688);
  CHECK(spec->box == std::array<uint32_t, 2>{128, 128});
  CHECK(spec->toString() == "5,0,-1,3,2688,-1,2688,128,128,1");
  // bf16 rows of 64 elements (128 bytes), sizes past 32 bits.
  auto wide = TensorMapSpec::parse("2,1,8589934592,-1,64,-1,64,256,64,2");
  REQUIRE(!!wide);
  CHECK(wide->sizes[0] == 8589934592);
  CHECK(TensorMapSpec::parse(wide->toString()).get() == *wide);
}

TEST_CASE("a tensor map spec the hardware cannot copy is refused with its number",
          "[support][tma]") {
  CHECK(refusal("5,0,-1,3") == "tensor map: '5,0,-1,3' is not ten integers");
  CHECK(refusal("5,0,-1,3,x,-1,2688,128,128,1") ==
        "tensor map: '5,0,-1,3,x,-1,2688,128,128,1' is not ten integers");
  CHECK(refusal("5,0,-1,-1,2688,-1,2688,128,128,1") ==
        "tensor map: dimension 0 needs a positive static size or a size parameter, got "
        "-1 and parameter -1");
  CHECK(refusal("5,0,0,-1,2688,-1,2688,128,128,1") ==
        "tensor map: dimension 0 needs a positive static size or a size parameter, got 0 "
        "and parameter -1");
  CHECK(refusal("5,0,-1,3,2688,-1,2688,512,128,1") ==
        "tensor map: box size 512 outside [1, 256]");
  CHECK(refusal("5,0,-1,3,2688,-1,2688,128,128,4") ==
        "tensor map: 4-byte elements (1 or 2 supported)");
  CHECK(refusal("5,0,-1,3,2688,-1,2688,128,96,1") ==
        "tensor map: box rows of 96 bytes, not 32, 64 or 128");
  CHECK(refusal("5,0,-1,3,2688,-1,2601,128,64,2") ==
        "tensor map: a row stride of 2601 elements is not a positive multiple of 16 "
        "bytes");
  CHECK(refusal("5,0,-1,3,2688,-1,2690,128,128,1") ==
        "tensor map: a row stride of 2690 elements is not a positive multiple of 16 "
        "bytes");
  CHECK(refusal("5,-1,-1,3,2688,-1,2688,128,128,1") ==
        "tensor map: a negative index or size");
  CHECK(refusal("5,0,-1,4294967296,2688,-1,2688,128,128,1") ==
        "tensor map: field 3 (4294967296) is out of range");
}
