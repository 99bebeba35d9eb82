// The one summary of timed samples (support/Timing.h): the median of an odd
// count is the middle sample, of an even count the mean of the two middle
// ones, whatever order the samples come in; no samples summarize to zeros.
#include "tilejit/support/Timing.h"

#include <catch2/catch.hpp>

#include <thread>

using tilejit::support::SampleSummary;
using tilejit::support::summarize;

TEST_CASE("samples summarize to one median, min and max", "[support][timing]") {
  SampleSummary odd = summarize({5, 1, 3});
  CHECK(odd.median == 3);
  CHECK(odd.min == 1);
  CHECK(odd.max == 5);
  CHECK(odd.n == 3);

  SampleSummary even = summarize({4, 1, 2, 3});
  CHECK(even.median == 2.5);
  CHECK(even.min == 1);
  CHECK(even.max == 4);
  CHECK(even.n == 4);

  SampleSummary one = summarize({7});
  CHECK(one.median == 7);
  CHECK(one.min == 7);
  CHECK(one.max == 7);

  SampleSummary none = summarize({});
  CHECK(none.n == 0);
  CHECK(none.median == 0);
}

TEST_CASE("msSince counts the wall time since a start", "[support][timing]") {
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  double ms = tilejit::support::msSince(start);
  CHECK(ms >= 2);
  CHECK(ms < 10000);
}
