// The Kernel under construction: parameters, locations, diagnostics, finish().
#include "BuilderInternal.h"

#include "tilejit/Dialect/Tile/IR/ElementTypes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tilejit {

static thread_local Kernel *currentKernel = nullptr;

Type toMlirType(MLIRContext &ctx, DType t) {
  Builder b(&ctx);
  switch (t) {
  case DType::F32:
    return b.getF32Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::F8E4M3:
    return Float8E4M3FNType::get(&ctx);
  case DType::I1:
    return b.getI1Type();
  case DType::I8:
    return b.getI8Type();
  case DType::I32:
    return b.getI32Type();
  case DType::I64:
    return b.getI64Type();
  }
  return {};
}

std::optional<DType> fromMlirType(Type t) { return tile::dtypeOf(t); }

/// Collects every diagnostic raised on the context while a kernel is built
/// (builder mistakes and verifier errors) as "file:line:col: error: message".
class DiagnosticCollector {
public:
  DiagnosticCollector(MLIRContext &ctx, std::vector<std::string> &out)
      : handler(&ctx, [&out](Diagnostic &diag) {
          std::string text;
          llvm::raw_string_ostream os(text);
          auto print = [&os](Diagnostic &d) {
            if (auto file = dyn_cast<FileLineColLoc>(d.getLocation()))
              os << file.getFilename().getValue() << ":" << file.getLine() << ":"
                 << file.getColumn() << ": ";
            else
              os << d.getLocation() << ": ";
            os << (d.getSeverity() == DiagnosticSeverity::Note ? "note: " : "error: ")
               << d.str();
          };
          print(diag);
          for (Diagnostic &note : diag.getNotes()) {
            os << "\n  ";
            print(note);
          }
          out.push_back(std::move(text));
          return success();
        }) {}

private:
  ScopedDiagnosticHandler handler;
};

Kernel::Kernel(MLIRContext &ctx, llvm::StringRef name, SrcLoc loc)
    : ctx_(ctx), builder_(&ctx), previous_(currentKernel) {
  ctx.loadDialect<tile::TileDialect, arith::ArithDialect, math::MathDialect,
                  scf::SCFDialect>();
  collector_ = std::make_unique<DiagnosticCollector>(ctx, diagnostics_);
  module_ = ModuleOp::create(location(loc));
  builder_.setInsertionPointToEnd(module_->getBody());
  auto kernel = tile::KernelOp::create(builder_, location(loc), name,
                                       builder_.getFunctionType({}, {}));
  kernelOp_ = kernel;
  builder_.setInsertionPointToEnd(&kernel.getBody().front());
  currentKernel = this;
}

Kernel::~Kernel() { currentKernel = previous_; }

Kernel *Kernel::current() { return currentKernel; }

Location Kernel::location(const SrcLoc &loc) {
  return FileLineColLoc::get(&ctx_, loc.file_name(), loc.line(), loc.column());
}

Value Kernel::fail(const SrcLoc &loc, const llvm::Twine &message) {
  emitError(location(loc)) << message.str();
  return Value();
}

Value Kernel::addParam(llvm::StringRef name, Type type, const SrcLoc &loc) {
  auto kernel = cast<tile::KernelOp>(kernelOp_);
  Block &entry = kernel.getBody().front();
  BlockArgument arg = entry.addArgument(type, location(loc));
  kernel.setFunctionTypeAttr(
      TypeAttr::get(builder_.getFunctionType(entry.getArgumentTypes(), {})));
  paramNames_.push_back(name.str());
  paramShapes_.emplace_back();
  paramInvariant_.push_back(false);
  return wrap(arg);
}

void Kernel::markInvariant(Value param, SrcLoc loc) {
  auto arg = dyn_cast_or_null<BlockArgument>(param.raw());
  auto kernel = cast<tile::KernelOp>(kernelOp_);
  if (!param.valid() || param.kernel() != this || !arg ||
      arg.getOwner() != &kernel.getBody().front() ||
      !isa<tile::PointerType>(arg.getType())) {
    fail(loc, "markInvariant needs a pointer parameter of this kernel");
    return;
  }
  paramInvariant_[arg.getArgNumber()] = true;
}

Value Kernel::ptrParam(llvm::StringRef name, DType pointee, SrcLoc loc) {
  return addParam(name, tile::PointerType::get(toMlirType(ctx_, pointee)), loc);
}

Value Kernel::ptrParam(llvm::StringRef name, DType pointee, std::vector<ParamDim> shape,
                       SrcLoc loc) {
  Value v = ptrParam(name, pointee, loc);
  paramShapes_.back() = std::move(shape);
  return v;
}

Value Kernel::scalarParam(llvm::StringRef name, DType type, SrcLoc loc) {
  if (type == DType::F8E4M3)
    return fail(loc, "scalar parameter '" + name + "' cannot be f8e4m3");
  return addParam(name, toMlirType(ctx_, type), loc);
}

void Kernel::setConfig(const Config &c, SrcLoc loc) {
  // getChecked reports a bad config (e.g. 3 warps) at the caller's line and
  // yields null; ConfigAttr::get would abort the process.
  auto config = tile::ConfigAttr::getChecked(
      [&] { return emitError(location(loc)); }, &ctx_, llvm::ArrayRef<int64_t>(c.tile),
      c.warps, c.stages, c.vector, c.splitK, int64_t(c.direct), c.producer, c.persistent);
  if (config)
    cast<tile::KernelOp>(kernelOp_).setConfigAttr(config);
}

llvm::Expected<OwningOpRef<ModuleOp>> Kernel::finish() {
  auto kernel = cast<tile::KernelOp>(kernelOp_);
  if (diagnostics_.empty()) {
    OpBuilder::InsertionGuard guard(builder_);
    builder_.setInsertionPointToEnd(&kernel.getBody().front());
    tile::ReturnOp::create(builder_, kernel.getLoc());
    // Parameter names travel as `tile.name` argument attributes, so the IR and
    // launch-time errors can name them.
    // A declared shape travels as `tile.shape`: sizes as integers, the names
    // of the scalar parameters holding sizes as strings ("?": any size).
    SmallVector<DictionaryAttr> argAttrs;
    // An invariant parameter (memory no kernel writes) travels as
    // `tile.invariant`: it may be read before tile.grid_dep_wait.
    for (auto [name, shape, invariant] :
         llvm::zip(paramNames_, paramShapes_, paramInvariant_)) {
      SmallVector<NamedAttribute> attrs = {builder_.getNamedAttr(
          tile::TileDialect::NameAttrHelper::getNameStr(), builder_.getStringAttr(name))};
      if (invariant)
        attrs.push_back(
            builder_.getNamedAttr(tile::TileDialect::InvariantAttrHelper::getNameStr(),
                                  builder_.getUnitAttr()));
      if (!shape.empty()) {
        SmallVector<Attribute> dims;
        for (const ParamDim &d : shape)
          dims.push_back(d.scalar.empty() ? Attribute(builder_.getI64IntegerAttr(d.size))
                                          : Attribute(builder_.getStringAttr(d.scalar)));
        attrs.push_back(
            builder_.getNamedAttr(tile::TileDialect::ShapeAttrHelper::getNameStr(),
                                  builder_.getArrayAttr(dims)));
      }
      argAttrs.push_back(builder_.getDictionaryAttr(attrs));
    }
    kernel.setAllArgAttrs(argAttrs);
    (void)verify(*module_);
  }
  if (!diagnostics_.empty()) {
    std::string all = "kernel '" + kernel.getSymName().str() + "' has " +
                      std::to_string(diagnostics_.size()) + " error(s):";
    for (const std::string &d : diagnostics_)
      all += "\n" + d;
    return llvm::createStringError(llvm::inconvertibleErrorCode(), all);
  }
  return std::move(module_);
}

} // namespace tilejit
