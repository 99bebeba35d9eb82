// Several processes sharing one cache directory: forked children race to compile
// and store the same kernels (and evict under a small cap) while the parent checks
// that every child succeeded and the directory holds only valid entries.
#include "RuntimeTestSupport.h"

#include "tilejit/runtime/DiskCache.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

using namespace tilejit::runtime;
using namespace tilejit::runtime::testing;

namespace {

constexpr int rounds = 12;

/// The kernel every process compiles in `round`.
std::string roundKernel(int round) { return llvm::formatv("k{0}", round).str(); }

/// A child's work: waits at the barrier, then compiles kernel r of every
/// round r through its own runtime on the shared directory. Returns the exit
/// status (0: every compile succeeded and got the right code).
int childCompiles(const std::string &dir, int barrierFd, uint64_t maxBytes) {
  char go = 0;
  if (::read(barrierFd, &go, 1) != 1)
    return 10;
  auto compiler = std::make_shared<FakeCompiler>();
  compiler->delay = std::chrono::milliseconds(3);
  RuntimeOptions options = optionsFor(dir);
  options.cacheMaxBytes = maxBytes;
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, options, device);
  for (int round = 0; round < rounds; ++round) {
    std::string name = roundKernel(round);
    std::string ir = fakeIR(name, ptrAndCount());
    Kernel kernel(*runtime, specFor(name, ir));
    if (llvm::Error err = kernel.prepare()) {
      llvm::errs() << "child " << ::getpid() << ": " << llvm::toString(std::move(err))
                   << "\n";
      return 11;
    }
    if (kernel.compiled()->ptx !=
        FakeCompiler::ptxFor({name, ir, archNamed("sm_90a"), {}}, *kernel.compiled()))
      return 12;
  }
  return runtime->stats().snapshot().corruptEntries == 0 ? 0 : 13;
}

/// Forks `children` processes running childCompiles, releases them at once
/// and returns their exit statuses.
std::vector<int> raceChildren(const std::string &dir, int children, uint64_t maxBytes) {
  int barrier[2];
  REQUIRE(::pipe(barrier) == 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < children; ++i) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(barrier[1]);
      // _exit: the child must not run the parent's atexit handlers or Catch2.
      ::_exit(childCompiles(dir, barrier[0], maxBytes));
    }
    pids.push_back(pid);
  }
  ::close(barrier[0]);
  std::string go(children, 'g');
  REQUIRE(::write(barrier[1], go.data(), go.size()) == ssize_t(go.size()));
  ::close(barrier[1]);
  std::vector<int> statuses;
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
  }
  return statuses;
}

} // namespace

TEST_CASE("processes compiling the same kernels into one directory all succeed and "
          "leave one valid entry each",
          "[runtime][cache][process]") {
  TempDir dir;
  for (int status : raceChildren(dir.path(), 2, defaultDiskCacheMaxBytes))
    CHECK(status == 0);

  std::vector<std::string> reports;
  auto cache = llvm::cantFail(
      DiskCache::open({dir.path(), defaultDiskCacheMaxBytes,
                       [&](llvm::StringRef m) { reports.push_back(m.str()); }}));
  VerifyReport report = llvm::cantFail(cache->verify(/*removeCorrupt=*/false));
  CHECK(report.valid == rounds);
  CHECK(report.corrupt.empty());
  std::error_code ec;
  CHECK(llvm::sys::fs::directory_iterator(dir.sub("tmp"), ec) ==
        llvm::sys::fs::directory_iterator());

  // A third process now finds every kernel on disk.
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(dir.path()), device);
  for (int round = 0; round < rounds; ++round) {
    std::string name = roundKernel(round);
    Kernel kernel(*runtime, specFor(name, fakeIR(name, ptrAndCount())));
    REQUIRE(message(kernel.compile()) == "");
    CHECK(kernel.origin() == CompileOrigin::Disk);
  }
  CHECK(compiler->compiles == 0);
}

TEST_CASE("processes evicting under a small cap concurrently leave only valid entries",
          "[runtime][cache][process]") {
  TempDir dir;
  // Room for about four entries: every store evicts while others read.
  uint64_t entryBytes = 0;
  {
    auto compiler = std::make_shared<FakeCompiler>();
    FakeDevice *device = nullptr;
    auto runtime = fakeRuntime(compiler, optionsFor(dir.sub("probe")), device);
    Kernel kernel(*runtime, specFor("k0", fakeIR("k0", ptrAndCount())));
    REQUIRE(message(kernel.compile()) == "");
    REQUIRE(!llvm::sys::fs::file_size(
        dir.sub("probe/entries/" + kernel.diskKey().str() + ".tjk"), entryBytes));
  }
  for (int status : raceChildren(dir.sub("shared"), 3, 4 * entryBytes + entryBytes / 2))
    CHECK(status == 0);
  auto cache = llvm::cantFail(DiskCache::open({dir.sub("shared")}));
  VerifyReport report = llvm::cantFail(cache->verify(/*removeCorrupt=*/false));
  CHECK(report.corrupt.empty());
  CHECK(report.valid >= 1);
  CHECK(report.valid <= 5);
}
