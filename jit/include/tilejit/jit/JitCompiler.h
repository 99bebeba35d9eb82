// The bridge between the runtime and the compiler: runtime::KernelCompiler on top of
// compileToPTX, and registered kernels turned into runtime::KernelSpecs.
#ifndef TILEJIT_JIT_JITCOMPILER_H
#define TILEJIT_JIT_JITCOMPILER_H

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/runtime/CompilerInterface.h"
#include "tilejit/runtime/Kernel.h"

#include <atomic>
#include <memory>
#include <string>

namespace tilejit {

/// The tilejit compiler as the runtime sees it. Each compile() parses the
/// request's canonical tile IR into a fresh MLIRContext of its own (no shared
/// state, no MLIR thread pool), so compiles run on several threads at once.
class JitCompiler : public runtime::KernelCompiler {
public:
  /// `dumpDirectory`: when not empty, every compile writes one numbered file
  /// per stage there (see TILEJIT_DUMP_DIR).
  explicit JitCompiler(std::string dumpDirectory = {});
  /// A compiler dumping into $TILEJIT_DUMP_DIR when it is set.
  static std::shared_ptr<JitCompiler> fromEnvironment();

  /// The build id (git commit of the sources + a hash of uncommitted changes,
  /// taken when CMake configured the build) and LLVM_VERSION_STRING.
  runtime::CompilerIdentity identity() const override;
  llvm::Expected<runtime::CompiledKernel>
  compile(const runtime::KernelRequest &request) override;

private:
  std::string dumpDirectory;
  /// Numbers compiles so parallel dumps of one kernel never share a name.
  std::atomic<unsigned> compileCounter{0};
};

/// `def` built with `spec` in a fresh context and printed canonically: generic
/// form, no locations (the text the disk cache key hashes).
llvm::Expected<std::string> buildCanonicalIR(const KernelDef &def,
                                             const Specialization &spec);

/// A runtime kernel spec whose buildIR builds `def` with `spec`. `def` must
/// outlive the spec (registry entries do).
runtime::KernelSpec makeKernelSpec(const KernelDef &def, Specialization spec,
                                   runtime::CompileOptions options = {});

} // namespace tilejit

#endif // TILEJIT_JIT_JITCOMPILER_H
