// Reading the runtime's environment variables.
#include "tilejit/runtime/RuntimeOptions.h"

#include "tilejit/support/Arch.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

using namespace llvm;

namespace tilejit::runtime {

/// The value of `name`; empty when unset.
static StringRef environment(const char *name) {
  const char *value = std::getenv(name);
  return value ? StringRef(value) : StringRef();
}

Expected<std::string> cacheDirectoryFromEnvironment() {
  if (StringRef dir = environment("TILEJIT_CACHE_DIR"); !dir.empty())
    return dir.str();
  SmallString<256> path;
  if (StringRef xdg = environment("XDG_CACHE_HOME"); !xdg.empty()) {
    path = xdg;
  } else if (StringRef home = environment("HOME"); !home.empty()) {
    path = home;
    sys::path::append(path, ".cache");
  } else {
    return createStringError(inconvertibleErrorCode(),
                             "cannot place the kernel cache: none of TILEJIT_CACHE_DIR, "
                             "XDG_CACHE_HOME and HOME is set");
  }
  sys::path::append(path, "tilejit");
  return std::string(path);
}

Expected<std::string> tuneDbPathFromEnvironment() {
  if (StringRef path = environment("TILEJIT_TUNE_DB"); !path.empty())
    return path.str();
  Expected<std::string> dir = cacheDirectoryFromEnvironment();
  if (!dir)
    return createStringError(
        inconvertibleErrorCode(),
        "no tuning database location: TILEJIT_TUNE_DB is not set and " +
            toString(dir.takeError()));
  SmallString<128> path(*dir);
  sys::path::append(path, "tune.json");
  return std::string(path);
}

/// A boolean variable: unset or empty is `unset`; 1/true/yes/on and
/// 0/false/no/off (any case) are read as such; anything else is an error, so a
/// value the user meant one way is never read the other.
static Expected<bool> booleanEnvironment(const char *name, bool unset) {
  StringRef value = environment(name).trim();
  if (value.empty())
    return unset;
  std::string lower = value.lower();
  for (StringRef yes : {"1", "true", "yes", "on"})
    if (lower == yes)
      return true;
  for (StringRef no : {"0", "false", "no", "off"})
    if (lower == no)
      return false;
  return createStringError(inconvertibleErrorCode(),
                           "%s='%s': expected 1, true, yes or on, or 0, false, no or off",
                           name, value.str().c_str());
}

Expected<RuntimeOptions> RuntimeOptions::fromEnvironment(bool archGiven) {
  RuntimeOptions options;
  // A caller that names its arch never reads TILEJIT_ARCH, so a stale value
  // there cannot break it.
  if (StringRef arch = environment("TILEJIT_ARCH"); !archGiven && !arch.empty()) {
    Expected<Arch> parsed = Arch::parse(arch);
    if (!parsed)
      return createStringError(inconvertibleErrorCode(),
                               "TILEJIT_ARCH: " + toString(parsed.takeError()));
    options.archOverride = *parsed;
  }
  Expected<bool> noCache = booleanEnvironment("TILEJIT_NO_CACHE", false);
  if (!noCache)
    return noCache.takeError();
  options.useDiskCache = !*noCache;
  Expected<bool> dependent = booleanEnvironment("TILEJIT_PDL", true);
  if (!dependent)
    return dependent.takeError();
  options.dependentLaunch = *dependent;
  if (options.useDiskCache) {
    Expected<std::string> dir = cacheDirectoryFromEnvironment();
    if (!dir)
      return dir.takeError();
    options.cacheDirectory = std::move(*dir);
  }
  // Without a place for the database there is nothing tuned to consult.
  if (Expected<std::string> tuneDb = tuneDbPathFromEnvironment())
    options.tuneDbPath = std::move(*tuneDb);
  else
    consumeError(tuneDb.takeError());
  return options;
}

} // namespace tilejit::runtime
