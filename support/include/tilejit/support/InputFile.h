// Reading what a user hands tilejit (config.json, safetensors shards, their
// index, disk cache entries, the tuning database) without trusting it: only
// regular files, opened without blocking (a FIFO or device never stalls or
// streams forever), sizes checked against a limit and against what the file
// itself states before anything is read, and paths from an index kept inside
// the directory that holds it. Depends on LLVMSupport only.
#ifndef TILEJIT_SUPPORT_INPUTFILE_H
#define TILEJIT_SUPPORT_INPUTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace tilejit::support {

/// Byte limits of the files tilejit reads: far above any real one, low
/// enough that a hostile size is refused before memory is committed to it.
inline constexpr uint64_t kMaxConfigBytes = 16ull << 20;
inline constexpr uint64_t kMaxIndexBytes = 64ull << 20;
inline constexpr uint64_t kMaxTuneDbBytes = 64ull << 20;
inline constexpr uint64_t kMaxCacheEntryBytes = 256ull << 20;
/// The safetensors reference implementation's own cap on a header.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

/// An open regular file. Opening never blocks and refuses anything else (a
/// directory, FIFO, socket or device), naming what it is; the size is the
/// one fstat saw when it opened, and reads never go past it.
class InputFile {
public:
  /// Opens `path`; `what` names it in errors ("config", "tuning database").
  static llvm::Expected<InputFile> open(llvm::StringRef path, llvm::StringRef what);
  /// As open(), but a path that does not exist is std::nullopt.
  static llvm::Expected<std::optional<InputFile>> openIfExists(llvm::StringRef path,
                                                               llvm::StringRef what);

  InputFile(InputFile &&other) noexcept;
  InputFile &operator=(InputFile &&other) noexcept;
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;
  ~InputFile();

  uint64_t size() const { return size_; }
  const std::string &path() const { return path_; }
  int descriptor() const { return fd_; }

  /// The whole file, refused unread when it is larger than `maxBytes`.
  llvm::Expected<std::string> readAll(uint64_t maxBytes) const;
  /// Exactly `bytes` bytes at `offset`, which must lie inside the file; a
  /// file that shrank underneath is an error, not a short read.
  llvm::Expected<std::string> readRange(uint64_t offset, uint64_t bytes) const;
  /// The whole file as a buffer (memory-mapped when large; nothing beyond
  /// what is touched is read).
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> map() const;

private:
  static llvm::Expected<std::optional<InputFile>>
  openChecked(llvm::StringRef path, llvm::StringRef what, bool mayBeMissing);
  InputFile(std::string path, std::string what, int fd, uint64_t size)
      : path_(std::move(path)), what_(std::move(what)), fd_(fd), size_(size) {}

  std::string path_, what_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// The whole of the regular file `path`, at most `maxBytes`.
llvm::Expected<std::string> readInputFile(llvm::StringRef path, llvm::StringRef what,
                                          uint64_t maxBytes);

/// `dir`/`name` for a file named inside `dir` by data read from it (a shard
/// listed by an index): `name` must be relative and hold no `..` component,
/// so it cannot leave `dir`. Symbolic links inside `dir` are followed as the
/// user laid them out (a Hugging Face snapshot links its files into a blob
/// store next to it).
llvm::Expected<std::string> resolveInside(llvm::StringRef dir, llvm::StringRef name,
                                          llvm::StringRef what);

} // namespace tilejit::support

#endif // TILEJIT_SUPPORT_INPUTFILE_H
