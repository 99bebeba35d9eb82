// A fresh directory for one test, removed with everything in it at scope exit.
#ifndef TILEJIT_TESTS_UNIT_TEMPDIR_H
#define TILEJIT_TESTS_UNIT_TEMPDIR_H

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <catch2/catch.hpp>

#include <string>

namespace tilejit::testing {

struct TempDir {
  llvm::SmallString<128> path;
  TempDir() { REQUIRE(!llvm::sys::fs::createUniqueDirectory("tilejit-test", path)); }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  /// `name` inside the directory.
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
};

} // namespace tilejit::testing

#endif // TILEJIT_TESTS_UNIT_TEMPDIR_H
