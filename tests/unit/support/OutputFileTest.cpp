// Checked output (support/OutputFile.h): a failed write or close is an error
// naming the path, never LLVM's fatal "IO failure on output stream"; a rename
// target that is not a regular file is refused; a full stdout is reported by
// the program instead of aborting it at exit.
#include "tilejit/support/OutputFile.h"

#include "../TempDir.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace tilejit::support;
using tilejit::testing::TempDir;

namespace {

std::string errorOf(llvm::Error err) { return llvm::toString(std::move(err)); }

} // namespace

TEST_CASE("a write that fails is an error naming the path, not a fatal stream error",
          "[support][badinput]") {
  TempDir dir;
  CHECK(!writeOutputFile(dir.file("out.ptx"), "// ptx\n", "PTX"));
  // A full disk: the bytes go to a buffer, the failure shows at the flush.
  CHECK(errorOf(writeOutputFile("/dev/full", std::string(1 << 16, 'x'), "PTX")) ==
        "cannot write PTX '/dev/full': No space left on device");
  CHECK(errorOf(writeOutputFile(dir.file("missing/out.ptx"), "x", "dump stage")) ==
        "cannot write dump stage '" + dir.file("missing/out.ptx") +
            "': No such file or directory");
  CHECK(errorOf(writeOutputFile(std::string(dir.path), "x", "launch metadata")) ==
        "cannot write launch metadata '" + std::string(dir.path) + "': Is a directory");
}

TEST_CASE("a file replaced by rename must be a regular file or a new path",
          "[support][badinput]") {
  TempDir dir;
  CHECK(!checkReplaceable(dir.file("new.json"), "tuning database"));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(dir.file("old.json"), ec);
    REQUIRE(!ec);
  }
  CHECK(!checkReplaceable(dir.file("old.json"), "tuning database"));
  REQUIRE(!llvm::sys::fs::create_link(dir.file("old.json"), dir.file("link.json")));
  CHECK(errorOf(checkReplaceable(dir.file("link.json"), "tuning database")) ==
        "refusing to replace tuning database '" + dir.file("link.json") +
            "': it is a symbolic link; write to a regular file or a new path");
  REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0644) == 0);
  CHECK(errorOf(checkReplaceable(dir.file("fifo"), "tuning database")) ==
        "refusing to replace tuning database '" + dir.file("fifo") +
            "': it is a FIFO; write to a regular file or a new path");
  CHECK(
      errorOf(checkReplaceable("/dev/null", "tuning database")) ==
      "refusing to replace tuning database '/dev/null': it is a character device; write "
      "to a regular file or a new path");
  CHECK(errorOf(checkReplaceable(std::string(dir.path), "tuning database")) ==
        "refusing to replace tuning database '" + std::string(dir.path) +
            "': it is a directory; write to a regular file or a new path");
}

TEST_CASE("a full standard output is the program's error, not an abort at exit",
          "[support][badinput]") {
  int report[2];
  REQUIRE(::pipe(report) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(report[0]);
    int full = ::open("/dev/full", O_WRONLY);
    if (full < 0 || ::dup2(full, STDOUT_FILENO) < 0)
      ::_exit(20);
    llvm::outs() << std::string(1 << 16, 'x');
    std::string message = errorOf(finishStandardStreams());
    (void)!::write(report[1], message.data(), message.size());
    ::close(report[1]);
    // A normal exit runs outs()'s destructor: it must find no error left.
    std::exit(0);
  }
  ::close(report[1]);
  std::string message;
  char buffer[256];
  for (ssize_t n; (n = ::read(report[0], buffer, sizeof(buffer))) > 0;)
    message.append(buffer, size_t(n));
  ::close(report[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(message == "cannot write standard output: No space left on device");
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
