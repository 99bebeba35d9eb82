// tilejit: the command-line driver: list, dump, compile, run, tune and tunedb.
#include "Commands.h"
#include "LaunchMetadata.h"
#include "TilejitVersion.h"

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/TuneProblems.h"
#include "tilejit/models/session/Backend.h"
#include "tilejit/runtime/CacheCommand.h"
#include "tilejit/support/InputFile.h"
#include "tilejit/support/OutputFile.h"
#include "tilejit/support/Timing.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

cl::SubCommand listCmd("list", "List the registered kernels and their constants");
cl::SubCommand dumpCmd("dump", "Print a kernel's IR at each compilation stage");
cl::SubCommand compileCmd("compile", "Compile a kernel ahead of time to PTX");

cl::SubCommand cacheCmd("cache", "Inspect the kernel disk cache: ls, verify or clear");
cl::opt<std::string> cacheAction(cl::Positional, cl::desc("<ls|verify|clear>"),
                                 cl::Required, cl::sub(cacheCmd));

cl::opt<bool> namesOnly("names", cl::desc("Print only the kernel names, one per line"),
                        cl::sub(listCmd));

cl::opt<std::string> kernelName(cl::Positional, cl::desc("<kernel>"), cl::Required,
                                cl::sub(dumpCmd), cl::sub(compileCmd));
cl::list<std::string> constants("set", cl::desc("Override a kernel constant: name=value"),
                                cl::sub(dumpCmd), cl::sub(compileCmd));
cl::opt<std::string> archName("arch", cl::desc("sm_90, sm_90a, sm_110a or sm_121a"),
                              cl::init("sm_90a"), cl::sub(dumpCmd), cl::sub(compileCmd));
cl::opt<std::string> stage("stage", cl::desc("tile|mlir|llvm|ptx|sass|all"),
                           cl::init("all"), cl::sub(dumpCmd));
cl::opt<std::string> outDir("out", cl::desc("Write one numbered file per stage here"),
                            cl::sub(dumpCmd));
cl::opt<std::string> outFile("o", cl::desc("Output PTX file"), cl::Required,
                             cl::sub(compileCmd));
cl::opt<bool> showTime("time", cl::desc("Print the time of each stage"),
                       cl::sub(compileCmd));
cl::opt<std::string> metaFile("meta",
                              cl::desc("Also write the launch metadata (entry, threads, "
                                       "shared bytes, sums, parameters) as JSON here"),
                              cl::sub(compileCmd));

using tilejit::cli::fail;

int runList(const tilejit::KernelRegistry &registry) {
  for (const tilejit::KernelDef *def : registry.all()) {
    if (namesOnly) {
      outs() << def->name << "\n";
      continue;
    }
    outs() << def->name << "\n    " << def->summary << "\n";
    for (const tilejit::KernelConstant &c : def->constants) {
      outs() << "    " << c.name << " = " << c.defaultValue << "  (" << c.help << ")";
      if (c.isTunable())
        outs() << "  tuned over "
               << join(map_range(c.candidates,
                                 [](int64_t v) { return std::to_string(v); }),
                       ",");
      outs() << "\n";
    }
  }
  return 0;
}

/// Builds the named kernel with the --set constants.
Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildKernel(const tilejit::KernelRegistry &registry, mlir::MLIRContext &ctx) {
  const tilejit::KernelDef *def = registry.find(kernelName);
  if (!def)
    return createStringError("unknown kernel '%s' (see 'tilejit list')",
                             kernelName.c_str());
  tilejit::ConstantValues values;
  for (const std::string &text : constants) {
    auto setting = tilejit::parseConstantSetting(text);
    if (!setting)
      return setting.takeError();
    values[setting->name] = setting->value;
  }
  auto spec = def->specialize(values);
  if (!spec)
    return spec.takeError();
  return def->build(ctx, *spec);
}

/// SASS through ptxas + cuobjdump/nvdisasm when they are installed.
Expected<std::string> disassemble(StringRef ptx, StringRef arch) {
  auto ptxas = sys::findProgramByName("ptxas", {"/usr/local/cuda/bin"});
  auto cuobjdump = sys::findProgramByName("cuobjdump", {"/usr/local/cuda/bin"});
  if (!ptxas || !cuobjdump)
    return createStringError("the sass stage needs ptxas and cuobjdump (CUDA toolkit)");
  SmallString<128> ptxPath, cubinPath, sassPath;
  sys::fs::createTemporaryFile("tilejit", "ptx", ptxPath);
  sys::fs::createTemporaryFile("tilejit", "cubin", cubinPath);
  sys::fs::createTemporaryFile("tilejit", "sass", sassPath);
  auto cleanup = make_scope_exit([&] {
    for (auto &p : {ptxPath, cubinPath, sassPath})
      sys::fs::remove(p);
  });
  if (Error err = tilejit::support::writeOutputFile(ptxPath, ptx, "PTX for ptxas"))
    return std::move(err);
  std::string archArg = ("-arch=" + arch).str();
  std::string err;
  if (sys::ExecuteAndWait(*ptxas, {*ptxas, archArg, ptxPath.str(), "-o", cubinPath.str()},
                          {}, {}, 0, 0, &err) != 0)
    return createStringError("ptxas failed: %s", err.c_str());
  std::optional<StringRef> redirects[] = {std::nullopt, sassPath.str(), std::nullopt};
  if (sys::ExecuteAndWait(*cuobjdump, {*cuobjdump, "--dump-sass", cubinPath.str()}, {},
                          redirects, 0, 0, &err) != 0)
    return createStringError("cuobjdump failed: %s", err.c_str());
  return tilejit::support::readInputFile(sassPath, "SASS listing", 1ull << 30);
}

int runDump(const tilejit::KernelRegistry &registry) {
  static const char *stages[] = {"tile", "mlir", "llvm", "ptx", "sass", "all"};
  if (!is_contained(stages, stage))
    return fail("unknown stage '" + stage + "' (tile|mlir|llvm|ptx|sass|all)");
  auto arch = tilejit::Arch::parse(archName);
  if (!arch)
    return fail(toString(arch.takeError()));
  mlir::DialectRegistry dialects;
  tilejit::registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  auto module = buildKernel(registry, ctx);
  if (!module)
    return fail(toString(module.takeError()));
  if (!outDir.empty())
    if (std::error_code ec = sys::fs::create_directories(outDir))
      return fail("cannot create '" + outDir + "': " + ec.message());

  unsigned counter = 0;
  std::string ptxText;
  // The first stage that cannot be written fails the dump (after the stages
  // before it); the rest are not attempted.
  Error writeError = Error::success();
  auto emit = [&](StringRef name, StringRef text) {
    StringRef family = name.split('.').first;
    if (family == "ptx")
      ptxText = text.str();
    if (stage != "all" && stage != family)
      return;
    if (outDir.empty()) {
      outs() << "// ----- " << name << " -----\n" << text << "\n";
      return;
    }
    if (writeError)
      return;
    std::string path =
        formatv("{0}/{1}.{2:d2}-{3}.{4}", outDir, kernelName, counter++, name,
                family == "ptx"    ? "ptx"
                : family == "llvm" ? "ll"
                                   : "mlir");
    if (Error err = tilejit::support::writeOutputFile(path, text, "dump stage")) {
      writeError = std::move(err);
      return;
    }
    outs() << "wrote " << path << "\n";
  };
  auto finish = [&](int rc) {
    if (writeError)
      return fail(toString(std::move(writeError)));
    return rc;
  };
  if (stage == "tile") {
    emit("tile", [&] {
      // With locations: each op names the C++ line of the builder call.
      std::string s;
      raw_string_ostream os(s);
      (*module)->print(os, mlir::OpPrintingFlags().enableDebugInfo());
      return s;
    }());
    return finish(0);
  }
  tilejit::CompileOptions opts;
  opts.dump = emit;
  opts.dumpLLVM = stage == "llvm" || stage == "all";
  auto compiled = tilejit::compileToPTX(**module, *arch, opts);
  if (!compiled) {
    consumeError(std::move(writeError));
    return fail(toString(compiled.takeError()));
  }
  if (stage == "sass" || stage == "all") {
    auto sass = disassemble(ptxText, archName);
    if (!sass) {
      if (stage == "sass") {
        consumeError(std::move(writeError));
        return fail(toString(sass.takeError()));
      }
      errs() << "tilejit: note: no sass stage: " << toString(sass.takeError()) << "\n";
    } else {
      emit("sass", *sass);
    }
  }
  return finish(0);
}

int runCompile(const tilejit::KernelRegistry &registry) {
  auto arch = tilejit::Arch::parse(archName);
  if (!arch)
    return fail(toString(arch.takeError()));
  mlir::DialectRegistry dialects;
  tilejit::registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  auto buildStart = std::chrono::steady_clock::now();
  auto module = buildKernel(registry, ctx);
  if (!module)
    return fail(toString(module.takeError()));
  double buildMs = tilejit::support::msSince(buildStart);
  auto compiled = tilejit::compileToPTX(**module, *arch);
  if (!compiled)
    return fail(toString(compiled.takeError()));
  if (Error err = tilejit::support::writeOutputFile(outFile, compiled->ptx, "PTX"))
    return fail(toString(std::move(err)));
  if (!metaFile.empty()) {
    std::string meta = formatv("{0:2}\n", tilejit::cli::launchMetadata(*compiled, *arch));
    if (Error err = tilejit::support::writeOutputFile(metaFile, meta, "launch metadata"))
      return fail(toString(std::move(err)));
  }
  if (showTime) {
    outs() << formatv("{0} for {1}: build {2:f2} ms, lower {3:f2} ms, ", kernelName,
                      archName, buildMs, compiled->lowerMs);
    compiled->ptxTimings.print(outs());
    outs() << formatv("; IR->PTX {0:f2} ms\n",
                      compiled->lowerMs + compiled->ptxTimings.totalMs());
  }
  return 0;
}

} // namespace

int tilejit::cli::fail(const Twine &message) {
  errs() << "tilejit: error: " << message << "\n";
  return 1;
}

namespace {

int runCommand() {
  if (cacheCmd) {
    if (Error err = tilejit::runtime::runCacheCommand(cacheAction, outs()))
      return fail(toString(std::move(err)));
    return 0;
  }
  // The kernels every front door plans with (models/session), registered once.
  auto kernels = tilejit::models::modelKernels();
  if (!kernels)
    return fail(toString(kernels.takeError()));
  const tilejit::KernelRegistry &registry = *kernels;
  tilejit::tuning::TuneProblemRegistry &problems =
      tilejit::tuning::TuneProblemRegistry::global();
  if (Error err = joinErrors(tilejit::models::registerModelTuneProblems(problems),
                             tilejit::models::registerExampleTuneProblems(problems)))
    return fail(toString(std::move(err)));
  if (listCmd)
    return runList(registry);
  if (dumpCmd)
    return runDump(registry);
  if (compileCmd)
    return runCompile(registry);
  if (tilejit::cli::runRequested())
    return tilejit::cli::runMain(registry);
  if (tilejit::cli::tuneRequested())
    return tilejit::cli::tuneMain(registry);
  if (tilejit::cli::tuneDbRequested())
    return tilejit::cli::tuneDbMain(registry);
  cl::PrintHelpMessage();
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // LLVM's libraries register hundreds of options of their own at the top
  // level; --help lists only the subcommands and the generic options. Hidden,
  // they still parse (-debug-only=... and the like keep working).
  static cl::OptionCategory topLevelCategory("tilejit");
  cl::HideUnrelatedOptions(topLevelCategory);
  cl::SetVersionPrinter([](raw_ostream &os) {
    os << "tilejit " TILEJIT_VERSION " (build " TILEJIT_BUILD_ID
          "), LLVM/MLIR " TILEJIT_LLVM_VERSION "\n";
  });
  cl::ParseCommandLineOptions(argc, argv,
                              "tilejit: a JIT tile-kernel compiler for NVIDIA GPUs\n");
  int rc = runCommand();
  // A full disk or a closed pipe on stdout is this command's failure, not
  // LLVM's fatal error when outs() is destroyed at exit.
  if (Error err = tilejit::support::finishStandardStreams())
    return fail(toString(std::move(err)));
  return rc;
}
