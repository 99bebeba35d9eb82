// Compile at load (docs/design.md#compile-at-load-never-during-capture): a model's
// kernels compile in parallel on worker threads, then load on the calling thread, with
// total and per-kernel times.
#include "tilejit/runtime/Jit.h"
#include "tilejit/support/Timing.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <chrono>

using namespace llvm;

namespace tilejit::runtime {

using support::msSince;

void LoadReport::print(raw_ostream &os) const {
  os << formatv("prepared {0} kernels in {1:F1} ms on {2} threads\n", kernels.size(),
                totalMs, threads);
  for (const KernelLoadRecord &record : kernels) {
    os << formatv("  {0,-32} {1,-9} compile {2,8:F1} ms  load {3,6:F1} ms", record.name,
                  compileOriginName(record.origin), record.compileMs, record.loadMs);
    if (!record.notLoaded.empty())
      os << "  (not loaded: " << record.notLoaded << ")";
    os << "\n";
  }
}

Expected<LoadReport> JitRuntime::compileAll(ArrayRef<Kernel *> kernels,
                                            unsigned threads) {
  auto start = std::chrono::steady_clock::now();
  if (Error err = captureGuard.refuseDuringCapture("compile kernels at load",
                                                   "call compileAll before capturing"))
    return std::move(err);
  LoadReport report;
  report.threads =
      threads ? threads : std::max(1u, hardware_concurrency().compute_thread_count());
  report.threads =
      std::min<unsigned>(report.threads, std::max<size_t>(kernels.size(), 1));
  report.kernels.resize(kernels.size());

  // Compile on workers: each kernel belongs to exactly one task, and
  // everything the tasks share (statistics, caches, the compiler) is
  // thread-safe. Failures are kept as text, one slot per kernel.
  std::vector<std::string> failures(kernels.size());
  {
    DefaultThreadPool pool(hardware_concurrency(report.threads));
    for (size_t i = 0; i < kernels.size(); ++i)
      pool.async([&, i] {
        auto kernelStart = std::chrono::steady_clock::now();
        if (Error err = kernels[i]->compile())
          failures[i] = toString(std::move(err));
        report.kernels[i].compileMs = msSince(kernelStart);
      });
    pool.wait();
  }

  // Load on this thread, which owns the context. A kernel the device cannot
  // run stays compiled but unloaded: its launch reports the arch mismatch.
  for (size_t i = 0; i < kernels.size(); ++i) {
    KernelLoadRecord &record = report.kernels[i];
    record.name = kernels[i]->name().str();
    record.origin = kernels[i]->origin();
    if (!failures[i].empty())
      continue;
    if (!canRun(dev->info(), arch)) {
      record.notLoaded = formatv("the device cannot run {0}", arch.name());
      continue;
    }
    auto loadStart = std::chrono::steady_clock::now();
    if (Error err = kernels[i]->prepare())
      failures[i] = toString(std::move(err));
    record.loadMs = msSince(loadStart);
  }
  report.totalMs = msSince(start);

  std::string failed;
  unsigned failedCount = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (failures[i].empty())
      continue;
    ++failedCount;
    failed += formatv("\n  {0}: {1}", kernels[i]->name(), failures[i]);
  }
  if (failedCount)
    return createStringError(inconvertibleErrorCode(),
                             formatv("{0} of {1} kernels failed to compile or load:{2}",
                                     failedCount, kernels.size(), failed));
  return report;
}

} // namespace tilejit::runtime
