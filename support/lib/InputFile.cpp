// InputFile: regular files opened with O_NONBLOCK and checked with fstat before
// a byte is read, then read with pread up to the size fstat gave.
#include "tilejit/support/InputFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tilejit::support {
namespace {

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "of an unknown kind";
}

std::error_code lastError() { return std::error_code(errno, std::generic_category()); }

} // namespace

llvm::Expected<std::optional<InputFile>>
InputFile::openChecked(llvm::StringRef path, llvm::StringRef what, bool mayBeMissing) {
  std::string name = path.str();
  // O_NONBLOCK: opening a FIFO without a writer (or a device that waits for
  // carrier) returns at once instead of blocking; fstat then refuses it.
  int fd;
  do
    fd = ::open(name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    std::error_code ec = lastError();
    if (mayBeMissing && ec == std::errc::no_such_file_or_directory)
      return std::nullopt;
    return llvm::createStringError(ec, "cannot open " + what + " '" + path +
                                           "': " + ec.message());
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::error_code ec = lastError();
    ::close(fd);
    return llvm::createStringError(ec, "cannot stat " + what + " '" + path +
                                           "': " + ec.message());
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return llvm::createStringError(std::make_error_code(std::errc::invalid_argument),
                                   what + " '" + path + "' is " + kindOf(st.st_mode) +
                                       ", not a regular file");
  }
  return std::optional<InputFile>(InputFile(name, what.str(), fd, uint64_t(st.st_size)));
}

llvm::Expected<InputFile> InputFile::open(llvm::StringRef path, llvm::StringRef what) {
  auto file = openChecked(path, what, /*mayBeMissing=*/false);
  if (!file)
    return file.takeError();
  return std::move(**file);
}

llvm::Expected<std::optional<InputFile>> InputFile::openIfExists(llvm::StringRef path,
                                                                 llvm::StringRef what) {
  return openChecked(path, what, /*mayBeMissing=*/true);
}

InputFile::InputFile(InputFile &&other) noexcept
    : path_(std::move(other.path_)), what_(std::move(other.what_)),
      fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

InputFile &InputFile::operator=(InputFile &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    path_ = std::move(other.path_);
    what_ = std::move(other.what_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

llvm::Expected<std::string> InputFile::readAll(uint64_t maxBytes) const {
  if (size_ > maxBytes)
    return llvm::createStringError(
        std::make_error_code(std::errc::file_too_large),
        "%s '%s' has %llu bytes, more than the %llu a %s may have", what_.c_str(),
        path_.c_str(), (unsigned long long)size_, (unsigned long long)maxBytes,
        what_.c_str());
  return readRange(0, size_);
}

llvm::Expected<std::string> InputFile::readRange(uint64_t offset, uint64_t bytes) const {
  if (offset > size_ || bytes > size_ - offset)
    return llvm::createStringError(
        std::make_error_code(std::errc::invalid_argument),
        "%s '%s': bytes [%llu, %llu) lie past its end (%llu bytes)", what_.c_str(),
        path_.c_str(), (unsigned long long)offset, (unsigned long long)(offset + bytes),
        (unsigned long long)size_);
  std::string out(bytes, '\0');
  uint64_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(fd_, out.data() + done, bytes - done, off_t(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      std::error_code ec = lastError();
      return llvm::createStringError(ec, "reading " + what_ + " '" + path_ +
                                             "': " + ec.message());
    }
    if (n == 0)
      return llvm::createStringError(
          std::make_error_code(std::errc::io_error),
          "%s '%s' ended after %llu of its %llu bytes (changed while read)",
          what_.c_str(), path_.c_str(), (unsigned long long)(offset + done),
          (unsigned long long)size_);
    done += uint64_t(n);
  }
  return out;
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> InputFile::map() const {
  auto buffer = llvm::MemoryBuffer::getOpenFile(fd_, path_, size_,
                                                /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read " + what_ + " '" + path_ +
                                       "': " + buffer.getError().message());
  return std::move(*buffer);
}

llvm::Expected<std::string> readInputFile(llvm::StringRef path, llvm::StringRef what,
                                          uint64_t maxBytes) {
  auto file = InputFile::open(path, what);
  if (!file)
    return file.takeError();
  return file->readAll(maxBytes);
}

llvm::Expected<std::string> resolveInside(llvm::StringRef dir, llvm::StringRef name,
                                          llvm::StringRef what) {
  auto refuse = [&](const char *why) {
    return llvm::createStringError(std::make_error_code(std::errc::invalid_argument),
                                   "%s names '%s', %s: only files inside '%s' are read",
                                   what.str().c_str(), name.str().c_str(), why,
                                   dir.str().c_str());
  };
  if (name.empty())
    return refuse("an empty path");
  if (name.contains('\0'))
    return refuse("a path with a NUL byte");
  if (llvm::sys::path::is_absolute(name))
    return refuse("an absolute path");
  for (llvm::StringRef part :
       llvm::make_range(llvm::sys::path::begin(name), llvm::sys::path::end(name)))
    if (part == "..")
      return refuse("a path through '..'");
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

} // namespace tilejit::support
