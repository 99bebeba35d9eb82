// The file-reading helper (support/InputFile.h, Json.h): what is not a regular
// file is refused at open, without blocking (a FIFO with no writer) or reading
// (a device, a huge sparse file); index paths stay inside their directory;
// JSON nested a million deep or naming a key twice is an error, not a stack
// overflow or a silent pick.
#include "tilejit/support/InputFile.h"
#include "tilejit/support/Json.h"

#include "../TempDir.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tilejit::support;
using tilejit::testing::TempDir;

namespace {

std::string errorOf(llvm::Error err) { return llvm::toString(std::move(err)); }

void writeText(const std::string &path, llvm::StringRef text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, text.data(), text.size()) == ssize_t(text.size()));
  ::close(fd);
}

} // namespace

TEST_CASE(
    "only regular files are read; a FIFO, a device or a directory is refused at once",
    "[support][badinput]") {
  TempDir dir;
  const std::string fifo = dir.file("config.json");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  auto start = std::chrono::steady_clock::now();
  // No writer: a blocking open() would wait forever.
  CHECK(errorOf(readInputFile(fifo, "config", kMaxConfigBytes).takeError()) ==
        "config '" + fifo + "' is a FIFO, not a regular file");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(errorOf(readInputFile("/dev/zero", "cache entry", 100).takeError()) ==
        "cache entry '/dev/zero' is a character device, not a regular file");
  CHECK(
      errorOf(readInputFile(std::string(dir.path), "tuning database", 100).takeError()) ==
      "tuning database '" + std::string(dir.path) +
          "' is a directory, not a regular file");
  CHECK(errorOf(readInputFile(dir.file("absent"), "config", 100).takeError()) ==
        "cannot open config '" + dir.file("absent") + "': No such file or directory");
  auto missing = InputFile::openIfExists(dir.file("absent"), "config");
  REQUIRE(bool(missing));
  CHECK(!*missing);
}

TEST_CASE("a file larger than its limit is refused before a byte is read",
          "[support][badinput]") {
  TempDir dir;
  const std::string sparse = dir.file("entry.tjk");
  int fd = ::open(sparse.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, off_t(8) << 30) == 0); // 8 GiB of holes
  ::close(fd);
  auto start = std::chrono::steady_clock::now();
  CHECK(errorOf(readInputFile(sparse, "kernel cache entry", kMaxCacheEntryBytes)
                    .takeError()) == "kernel cache entry '" + sparse +
                                         "' has 8589934592 bytes, more than the "
                                         "268435456 a kernel cache entry may have");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));

  writeText(dir.file("small"), "0123456789");
  auto file = InputFile::open(dir.file("small"), "shard");
  REQUIRE(bool(file));
  CHECK(file->size() == 10);
  CHECK(llvm::cantFail(file->readRange(2, 3)) == "234");
  CHECK(errorOf(file->readRange(8, 4).takeError()) ==
        "shard '" + dir.file("small") + "': bytes [8, 12) lie past its end (10 bytes)");
  // The size is the one fstat gave at open: a file that shrinks underneath is
  // an error, not a short read passed on as data.
  REQUIRE(::truncate(dir.file("small").c_str(), 4) == 0);
  CHECK(errorOf(file->readAll(100).takeError()) ==
        "shard '" + dir.file("small") +
            "' ended after 4 of its 10 bytes (changed while read)");
}

TEST_CASE("a path from an index stays inside its directory", "[support][badinput]") {
  CHECK(llvm::cantFail(resolveInside("/ckpt", "model-00001.safetensors", "index")) ==
        "/ckpt/model-00001.safetensors");
  CHECK(llvm::cantFail(resolveInside("/ckpt", "sub/shard.safetensors", "index")) ==
        "/ckpt/sub/shard.safetensors");
  CHECK(errorOf(resolveInside("/ckpt", "../../../../etc/passwd", "index entry 'w'")
                    .takeError()) ==
        "index entry 'w' names '../../../../etc/passwd', a path through '..': only files "
        "inside '/ckpt' are read");
  CHECK(
      errorOf(resolveInside("/ckpt", "/etc/passwd", "index").takeError()) ==
      "index names '/etc/passwd', an absolute path: only files inside '/ckpt' are read");
  CHECK(
      errorOf(resolveInside("/ckpt", "a/../../b", "index").takeError()) ==
      "index names 'a/../../b', a path through '..': only files inside '/ckpt' are read");
  CHECK(errorOf(resolveInside("/ckpt", "", "index").takeError()) ==
        "index names '', an empty path: only files inside '/ckpt' are read");
}

TEST_CASE("JSON nesting is bounded and a key given twice is an error",
          "[support][badinput]") {
  // llvm::json::parse recurses once per level: a million levels overflowed
  // the stack before the scan.
  std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  CHECK(errorOf(parseJson(deep).takeError()) ==
        "[1:64, byte=64]: arrays and objects nest deeper than 64 levels");
  CHECK(bool(parseJson(std::string(64, '[') + std::string(64, ']'))));
  // Brackets inside strings do not count.
  CHECK(bool(parseJson("{\"k\": \"" + std::string(1000, '[') + "\"}")));
  CHECK(errorOf(parseJson("{\"a\": 1,\n \"b\": {\"c\": 2, \"c\": 3}}").takeError()) ==
        "[2:15, byte=24]: duplicate key \"c\" in one object");
  // The same key spelled with an escape is the same key.
  CHECK(errorOf(parseJson(R"({"ab": 1, "a\u0062": 2})").takeError()) ==
        "[1:10, byte=10]: duplicate key \"ab\" in one object");
  // One name in two objects is no duplicate.
  CHECK(bool(parseJson(R"({"x": {"n": 1}, "y": {"n": 2}})")));
  // Syntax errors are llvm::json's own.
  CHECK(errorOf(parseJson("[1, 2").takeError()) == "[1:5, byte=5]: Expected , or ] after "
                                                   "array element");
}
