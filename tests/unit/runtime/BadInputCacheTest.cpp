// A cache directory the process cannot write (read-only) or that runs out of
// space mid-write: kernels still compile, load and launch, the failed write is
// one warning naming the kernel and the reason, and the directory is left
// byte-for-byte as it was. Each case runs in a forked child, which drops root
// privileges (so that permission bits bind) or lowers RLIMIT_FSIZE (a write
// that fails part-way, as on a full disk) without affecting the test process.
#include "RuntimeTestSupport.h"

#include "llvm/Support/MemoryBuffer.h"

#include <catch2/catch.hpp>

#include <map>

#include <csignal>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace tilejit::runtime;
using namespace tilejit::runtime::testing;

namespace {

enum class Fault { ReadOnly, Full };

/// Every file under `dir` with its bytes.
std::map<std::string, std::string> snapshotFiles(const std::string &dir) {
  std::map<std::string, std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    if (it->type() == llvm::sys::fs::file_type::regular_file)
      files[it->path()] = (*llvm::MemoryBuffer::getFile(it->path()))->getBuffer().str();
  return files;
}

/// The child's side: applies `fault`, opens a runtime on `cacheDir`, prepares
/// `cached` (stored by the parent) and `fresh` (not stored) and launches
/// `fresh`. Writes one line per event to `out`; returns the exit status.
int childRun(Fault fault, const std::string &cacheDir, int out) {
  if (fault == Fault::ReadOnly && ::geteuid() == 0 &&
      (::setgid(65534) != 0 || ::setuid(65534) != 0))
    return 20;
  if (fault == Fault::Full) {
    ::signal(SIGXFSZ, SIG_IGN); // the write fails with EFBIG instead
    rlimit limit{64, 64};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
      return 21;
  }
  std::string report;
  std::vector<std::string> warnings;
  auto compiler = std::make_shared<FakeCompiler>();
  auto created = JitRuntime::create(std::make_unique<FakeDevice>(), compiler,
                                    optionsFor(cacheDir, &warnings));
  if (!created) {
    report += "create: " + llvm::toString(created.takeError()) + "\n";
  } else {
    JitRuntime &runtime = **created;
    Kernel cached(runtime, specFor("cached", fakeIR("cached", ptrAndCount())));
    Kernel fresh(runtime, specFor("fresh", fakeIR("fresh", ptrAndCount())));
    for (Kernel *kernel : {&cached, &fresh}) {
      std::string error = message(kernel->prepare());
      report += kernel->name().str() + ": " +
                (error.empty() ? compileOriginName(kernel->origin()).str() : error) +
                "\n";
    }
    Stream stream = llvm::cantFail(Stream::create(runtime.device()));
    DeviceBuffer x = llvm::cantFail(runtime.allocate(64));
    report +=
        "launch: " +
        message(fresh.launch(stream, {1, 1, 1},
                             {KernelArg::pointer(x.address()), KernelArg::i32(4)})) +
        "\n";
    for (const std::string &warning : warnings)
      report += "warning: " + warning + "\n";
  }
  return ::write(out, report.data(), report.size()) == ssize_t(report.size()) ? 0 : 22;
}

/// Forks childRun and returns its report; REQUIREs a clean exit.
std::string runChild(Fault fault, const std::string &cacheDir) {
  int pipeFds[2];
  REQUIRE(::pipe(pipeFds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pipeFds[0]);
    // _exit: the child must not run the parent's atexit handlers or Catch2.
    ::_exit(childRun(fault, cacheDir, pipeFds[1]));
  }
  ::close(pipeFds[1]);
  std::string report;
  char chunk[4096];
  for (ssize_t n; (n = ::read(pipeFds[0], chunk, sizeof(chunk))) > 0;)
    report.append(chunk, size_t(n));
  ::close(pipeFds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO(report);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return report;
}

/// A cache directory holding the entry of kernel "cached".
void storeCached(const std::string &cacheDir) {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(cacheDir), device);
  Kernel cached(*runtime, specFor("cached", fakeIR("cached", ptrAndCount())));
  REQUIRE(message(cached.compile()) == "");
}

/// Sets the cache's directories to `mode` and its files to `mode` without
/// the execute bits.
void chmodTree(const std::string &dir, mode_t mode) {
  for (const auto &file : snapshotFiles(dir))
    REQUIRE(::chmod(file.first.c_str(), mode & 0666) == 0);
  for (const std::string &path : {dir, dir + "/entries", dir + "/tmp"})
    REQUIRE(::chmod(path.c_str(), mode) == 0);
}

} // namespace

TEST_CASE("a read-only cache directory: kernels still run, one warning, nothing "
          "written",
          "[runtime][badinput][cache]") {
  TempDir dir;
  const std::string cacheDir = dir.sub("cache");
  storeCached(cacheDir);
  // createUniqueDirectory made the parent 0700 and the entry is 0600; the
  // unprivileged child must reach and read them.
  REQUIRE(::chmod(dir.path().c_str(), 0755) == 0);
  chmodTree(cacheDir, 0555);
  const auto before = snapshotFiles(cacheDir);
  REQUIRE(before.size() == 2); // the entry and the lock file

  std::string report = runChild(Fault::ReadOnly, cacheDir);
  CHECK_THAT(report, Catch::StartsWith("cached: disk\nfresh: compiler\nlaunch: \n"
                                       "warning: could not write the kernel cache "
                                       "entry of 'fresh': '" +
                                       cacheDir + "/tmp/"));
  CHECK_THAT(report, Catch::EndsWith("': Permission denied\n"));
  CHECK(std::count(report.begin(), report.end(), '\n') == 4);
  chmodTree(cacheDir, 0755);
  CHECK(snapshotFiles(cacheDir) == before);

  // A cache directory that cannot be created is an error of the runtime's
  // creation, naming the path.
  const std::string missing = cacheDir + "/sub";
  chmodTree(cacheDir, 0555);
  report = runChild(Fault::ReadOnly, missing);
  chmodTree(cacheDir, 0755);
  CHECK(report == "create: '" + missing + "/entries': Permission denied\n");
  CHECK(snapshotFiles(cacheDir) == before);
}

TEST_CASE("a cache directory that fills up: kernels still run, one warning, no "
          "partial entry",
          "[runtime][badinput][cache]") {
  TempDir dir;
  const std::string cacheDir = dir.sub("cache");
  storeCached(cacheDir);
  const auto before = snapshotFiles(cacheDir);
  REQUIRE(before.size() == 2);

  std::string report = runChild(Fault::Full, cacheDir);
  CHECK_THAT(report, Catch::StartsWith("cached: disk\nfresh: compiler\nlaunch: \n"
                                       "warning: could not write the kernel cache "
                                       "entry of 'fresh': '" +
                                       cacheDir + "/tmp/"));
  CHECK_THAT(report, Catch::EndsWith("': File too large\n"));
  CHECK(std::count(report.begin(), report.end(), '\n') == 4);
  // The temporary file was removed; the entry is as it was.
  CHECK(snapshotFiles(cacheDir) == before);
}
