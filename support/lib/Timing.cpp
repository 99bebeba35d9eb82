// The summary of timed samples (Timing.h).
#include "tilejit/support/Timing.h"

#include <algorithm>

namespace tilejit::support {

SampleSummary summarize(std::vector<double> samples) {
  SampleSummary s;
  s.n = samples.size();
  if (samples.empty())
    return s;
  std::sort(samples.begin(), samples.end());
  const size_t half = s.n / 2;
  s.median = s.n % 2 ? samples[half] : (samples[half - 1] + samples[half]) / 2;
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

} // namespace tilejit::support
