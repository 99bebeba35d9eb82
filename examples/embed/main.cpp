// tilejit-embed-example: a NemotronH checkpoint's Mamba mixers run from a C++
// program through tilejit's embedding API alone (no LLVM, MLIR or CUDA header):
// load the model, allocate the step tensors on the engine's device, run one
// prefill of fresh sequences, then decode steps that continue them, and print
// what each cost. Without a GPU it runs on the interpreter.
//
// Usage: tilejit-embed-example [CHECKPOINT_DIR] [--layers N] [--rows B]
//          [--tokens T] [--steps S] [--backend auto|gpu|interpreter]
//          [--set KERNEL.CONSTANT=V]...
// Without a directory: the embedded synthetic weights at full NemotronH geometry.
#include "tilejit/embed/Embed.h"
#include "tilejit/embed/Format.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace embed = tilejit::embed;

namespace {

struct Options {
  embed::ModelOptions model{"", 1, {}};
  embed::EngineOptions engine;
  embed::SessionOptions session;
  int64_t rows = 1, tokens = 16, steps = 4;
};

int usage(const std::string &why) {
  fmt::print(stderr,
             "tilejit-embed-example: {}\nusage: tilejit-embed-example [CHECKPOINT_DIR] "
             "[--layers N] [--rows B] [--tokens T] [--steps S] "
             "[--backend auto|gpu|interpreter] [--set KERNEL.CONSTANT=V]...\n",
             why);
  return 2;
}

/// Random bf16 values in [-1, 1] (round to nearest even from f32).
std::vector<uint16_t> randomBF16(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<uint16_t> out(n);
  for (uint16_t &v : out) {
    float f = uniform(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    v = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  }
  return out;
}

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// A tensor of `shape` bf16 in a fresh engine buffer.
embed::Result<std::pair<embed::Buffer, embed::TensorView>>
tensor(embed::Engine &engine, std::vector<int64_t> shape) {
  auto buffer = engine.allocate(size_t(shape[0] * shape[1]) * 2);
  if (!buffer)
    return buffer.error();
  auto view = buffer->view(embed::DType::BF16, std::move(shape));
  if (!view)
    return view.error();
  return std::pair{*buffer, *view};
}

/// Fails when `out` (bf16) holds a value that is not finite, or only zeros.
embed::Status checkOutput(const std::vector<uint16_t> &out, const char *what) {
  size_t nonzero = 0;
  double sum = 0;
  for (uint16_t bits : out) {
    uint32_t wide = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &wide, 4);
    if (!std::isfinite(f))
      return embed::Error(embed::ErrorKind::Run,
                          fmt::format("{}: a value is not finite", what));
    nonzero += f != 0.0f;
    sum += std::abs(f);
  }
  if (nonzero == 0)
    return embed::Error(embed::ErrorKind::Run,
                        fmt::format("{}: every value is zero", what));
  fmt::print("{}: {} values, mean |x| {:.4f}, all finite\n", what, out.size(),
             sum / double(out.size()));
  return {};
}

embed::Status run(const Options &o) {
  auto engine = embed::Engine::open(o.engine);
  if (!engine)
    return engine.error();
  fmt::print("engine: {}\n", engine->describe());

  embed::ModelOptions modelOptions = o.model;
  modelOptions.progress = [](int done, int total) {
    fmt::print("weights: {}/{} layers\n", done, total);
  };
  auto model = embed::Model::load(modelOptions);
  if (!model)
    return model.error();
  const embed::ModelInfo &info = model->info();
  fmt::print("model: {} ({}), {} of its {} Mamba layer(s): projections FP8 in {}, bf16 "
             "in {}, mixed in {}; {:.1f} MB of weights loaded in {:.0f} ms\n",
             info.source, info.describeLayers(), info.loadedLayers.size(),
             info.mambaLayers, info.fp8Layers, info.bf16Layers, info.mixedLayers,
             info.weightBytes / 1e6, info.loadMs);

  embed::SessionOptions sessionOptions = o.session;
  sessionOptions.slots = o.rows;
  auto session = embed::Session::create(*engine, *model, sessionOptions);
  if (!session)
    return session.error();
  // The decode step first: planning it refuses a row count whose pages and
  // buffers the machine cannot hold, before this program sizes anything by it.
  auto start = std::chrono::steady_clock::now();
  auto decode = session->decode(o.rows);
  if (!decode)
    return decode.error();
  // One fresh sequence per row, prefilled together; decode continues them.
  std::vector<embed::PrefillSequence> batch;
  std::vector<int32_t> slots;
  for (int32_t row = 0; row < o.rows; ++row) {
    batch.push_back({o.tokens, row, false});
    slots.push_back(row);
  }
  auto prefill = session->prefill(batch);
  if (!prefill)
    return prefill.error();
  fmt::print("steps: prefill of {} token(s) and decode of {} row(s) ready in {:.0f} ms\n",
             prefill->tokens(), decode->rows(), seconds(start) * 1e3);

  const int64_t hidden = info.hiddenSize;
  auto prefillIn = tensor(*engine, {prefill->tokens(), hidden});
  auto prefillOut = tensor(*engine, {prefill->tokens(), hidden});
  auto decodeIn = tensor(*engine, {o.rows, hidden});
  auto decodeOut = tensor(*engine, {o.rows, hidden});
  for (auto *t : {&prefillIn, &prefillOut, &decodeIn, &decodeOut})
    if (!*t)
      return t->error();
  std::mt19937 rng(2027);
  std::vector<uint16_t> host = randomBF16(size_t(prefill->tokens() * hidden), rng);
  if (auto s = engine->upload(prefillIn->first, host.data(), host.size() * 2); !s)
    return s;
  host = randomBF16(size_t(o.rows * hidden), rng);
  if (auto s = engine->upload(decodeIn->first, host.data(), host.size() * 2); !s)
    return s;

  embed::Stream stream = nullptr; // the legacy default stream
  start = std::chrono::steady_clock::now();
  if (auto s = prefill->run(prefillIn->second, prefillOut->second, stream); !s)
    return s;
  if (auto s = engine->synchronize(stream); !s)
    return s;
  const double prefillS = seconds(start);
  fmt::print("prefill: {} token(s) in {:.1f} ms = {:.1f} tokens/s (the first run "
             "includes building the kernels on the interpreter)\n",
             prefill->tokens(), prefillS * 1e3, prefill->tokens() / prefillS);

  start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < o.steps; ++step)
    if (auto s = decode->run(decodeIn->second, slots, decodeOut->second, stream); !s)
      return s;
  if (auto s = engine->synchronize(stream); !s)
    return s;
  const double decodeS = seconds(start);
  fmt::print("decode: {} step(s) of {} row(s) in {:.1f} ms = {:.2f} ms per step, {:.1f} "
             "tokens/s\n",
             o.steps, o.rows, decodeS * 1e3, decodeS * 1e3 / double(o.steps),
             double(o.steps * o.rows) / decodeS);

  std::vector<uint16_t> out(size_t(prefill->tokens() * hidden));
  if (auto s = engine->download(out.data(), prefillOut->first, out.size() * 2); !s)
    return s;
  if (auto s = checkOutput(out, "prefill output"); !s)
    return s;
  out.resize(size_t(o.rows * hidden));
  if (auto s = engine->download(out.data(), decodeOut->first, out.size() * 2); !s)
    return s;
  if (auto s = checkOutput(out, "decode output"); !s)
    return s;
  fmt::print("load statistics: {}\n", engine->stats());
  return {};
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      o.model.checkpoint = arg;
      continue;
    }
    if (i + 1 == argc)
      return usage(arg + " needs a value");
    std::string value = argv[++i];
    try {
      if (arg == "--layers")
        o.model.layers = std::stoi(value);
      else if (arg == "--rows")
        o.rows = std::stoll(value);
      else if (arg == "--tokens")
        o.tokens = std::stoll(value);
      else if (arg == "--steps")
        o.steps = std::stoll(value);
      else if (arg == "--set")
        o.session.settings.push_back(value);
      else if (arg == "--backend")
        o.engine.backend = value == "gpu"           ? embed::Backend::Gpu
                           : value == "interpreter" ? embed::Backend::Interpreter
                           : value == "auto"        ? embed::Backend::Auto
                                                    : throw std::invalid_argument(value);
      else
        return usage("unknown option " + arg);
    } catch (const std::exception &) {
      return usage(arg + " " + value + ": not a valid value");
    }
  }
  if (o.rows < 1 || o.tokens < 1 || o.steps < 1)
    return usage("--rows, --tokens and --steps must be at least 1");
  o.engine.log = [](const std::string &line) { fmt::print("  {}\n", line); };
  embed::Status status = run(o);
  if (!status) {
    fmt::print(stderr, "tilejit-embed-example: {}\n", status);
    return 1;
  }
  return 0;
}
