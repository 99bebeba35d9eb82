// Writing files without LLVM's fatal stream errors: a raw_fd_ostream whose
// write or close failed calls report_fatal_error when it is destroyed unless
// its error was taken and cleared. These helpers take it and hand it back as
// an llvm::Error naming the path.
#ifndef TILEJIT_SUPPORT_OUTPUTFILE_H
#define TILEJIT_SUPPORT_OUTPUTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace tilejit::support {

/// Closes `os` (written as `what` at `path`) and returns what failed in any
/// write or in the close, clearing the stream's error so that destroying it
/// is harmless.
llvm::Error closeChecked(llvm::raw_fd_ostream &os, llvm::StringRef path,
                         llvm::StringRef what);

/// Creates or truncates `path` and writes `bytes`; every failure (opening, a
/// full disk, closing) is an error naming `what` and `path`.
llvm::Error writeOutputFile(llvm::StringRef path, llvm::StringRef bytes,
                            llvm::StringRef what);

/// For writers that rename a finished temporary file over `path`: refuses a
/// `path` that exists and is not a regular file (a symbolic link, FIFO,
/// device or directory), which the rename would replace or write through.
llvm::Error checkReplaceable(llvm::StringRef path, llvm::StringRef what);

/// Flushes a program's standard output and returns what failed writing it
/// (a closed pipe, a full disk), clearing the error; the error streams'
/// own failures are cleared too, since there is nowhere left to report them.
/// Call before returning from main: outs() otherwise aborts at exit.
llvm::Error finishStandardStreams();

} // namespace tilejit::support

#endif // TILEJIT_SUPPORT_OUTPUTFILE_H
