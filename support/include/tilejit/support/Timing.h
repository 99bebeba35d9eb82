// Wall-clock intervals and the summary of timed samples every measurement
// prints (docs/design.md#measuring-method): one definition of the median, so
// a kernel's time reads the same from the tuner, the plan timings and the CLI.
#ifndef TILEJIT_SUPPORT_TIMING_H
#define TILEJIT_SUPPORT_TIMING_H

#include <chrono>
#include <cstddef>
#include <vector>

namespace tilejit::support {

/// Milliseconds of wall time since `start`.
inline double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                   start)
      .count();
}

/// Median, minimum and maximum of `n` samples (all 0 when there are none).
struct SampleSummary {
  double median = 0, min = 0, max = 0;
  size_t n = 0;
};

/// Summarizes `samples` (any order). The median of an even count is the mean
/// of the two middle samples.
SampleSummary summarize(std::vector<double> samples);

} // namespace tilejit::support

#endif // TILEJIT_SUPPORT_TIMING_H
