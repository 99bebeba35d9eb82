// Checked output streams (OutputFile.h).
#include "tilejit/support/OutputFile.h"

#include "llvm/Support/FileSystem.h"

namespace tilejit::support {

llvm::Error closeChecked(llvm::raw_fd_ostream &os, llvm::StringRef path,
                         llvm::StringRef what) {
  os.close();
  if (!os.has_error())
    return llvm::Error::success();
  std::error_code ec = os.error();
  os.clear_error();
  return llvm::createStringError(ec, "cannot write " + what + " '" + path +
                                         "': " + ec.message());
}

llvm::Error writeOutputFile(llvm::StringRef path, llvm::StringRef bytes,
                            llvm::StringRef what) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    os.clear_error();
    return llvm::createStringError(ec, "cannot write " + what + " '" + path +
                                           "': " + ec.message());
  }
  os << bytes;
  return closeChecked(os, path, what);
}

llvm::Error checkReplaceable(llvm::StringRef path, llvm::StringRef what) {
  llvm::sys::fs::file_status status;
  // Not following links: the rename would replace the link itself.
  std::error_code ec = llvm::sys::fs::status(path, status, /*Follow=*/false);
  if (ec == std::errc::no_such_file_or_directory)
    return llvm::Error::success();
  if (ec)
    return llvm::createStringError(ec, "cannot check " + what + " '" + path +
                                           "': " + ec.message());
  const char *kind = nullptr;
  switch (status.type()) {
  case llvm::sys::fs::file_type::regular_file:
    return llvm::Error::success();
  case llvm::sys::fs::file_type::symlink_file:
    kind = "a symbolic link";
    break;
  case llvm::sys::fs::file_type::directory_file:
    kind = "a directory";
    break;
  case llvm::sys::fs::file_type::fifo_file:
    kind = "a FIFO";
    break;
  case llvm::sys::fs::file_type::character_file:
    kind = "a character device";
    break;
  case llvm::sys::fs::file_type::block_file:
    kind = "a block device";
    break;
  case llvm::sys::fs::file_type::socket_file:
    kind = "a socket";
    break;
  default:
    kind = "not a regular file";
    break;
  }
  return llvm::createStringError(std::make_error_code(std::errc::invalid_argument),
                                 "refusing to replace " + what + " '" + path +
                                     "': it is " + kind +
                                     "; write to a regular file or a new path");
}

llvm::Error finishStandardStreams() {
  llvm::outs().flush();
  llvm::Error result = llvm::Error::success();
  if (llvm::outs().has_error()) {
    std::error_code ec = llvm::outs().error();
    result = llvm::createStringError(ec, "cannot write standard output: " + ec.message());
    llvm::outs().clear_error();
  }
  llvm::errs().clear_error();
  return result;
}

} // namespace tilejit::support
