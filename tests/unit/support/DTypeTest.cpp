// The element types every layer shares (support/DType.h): the IR's names, the
// bytes an element takes in memory (an i1 takes one) and which are floats.
#include "tilejit/support/DType.h"

#include <catch2/catch.hpp>

#include <string>

using tilejit::DType;

TEST_CASE("element types have the IR's names and their sizes", "[support][dtype]") {
  CHECK(std::string(dtypeName(DType::F8E4M3)) == "f8e4m3");
  CHECK(std::string(dtypeName(DType::BF16)) == "bf16");
  CHECK(std::string(dtypeName(DType::I1)) == "i1");
  CHECK(dtypeBytes(DType::F32) == 4);
  CHECK(dtypeBytes(DType::BF16) == 2);
  CHECK(dtypeBytes(DType::F8E4M3) == 1);
  CHECK(dtypeBytes(DType::I1) == 1);
  CHECK(dtypeBits(DType::I1) == 1);
  CHECK(dtypeBytes(DType::I64) == 8);
  CHECK(isFloat(DType::F8E4M3));
  CHECK(!isFloat(DType::I8));
}
