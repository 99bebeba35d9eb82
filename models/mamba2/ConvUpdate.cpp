// R3d (reference-math.md): one token per sequence through the causal depthwise
// conv and SiLU; the conv state page [slots, channels, 3] (oldest tap first) is
// shifted in place. A negative slot is a padding row: state untouched, output 0.
#include "tilejit/models/Kernels.h"

namespace tilejit::models {

void buildConvUpdate(Kernel &k, const Specialization &spec) {
  const int64_t channels = spec.get("channels"), block = spec.get("block");
  Value x = k.ptrParam("x", DType::BF16);          // [batch, channels]
  Value state = k.ptrParam("conv_state", DType::BF16); // [slots, channels, 3]
  Value slots = k.ptrParam("slots", DType::I32);   // [batch]
  Value weight = k.ptrParam("weight", DType::BF16); // [channels, 4]
  Value bias = k.ptrParam("bias", DType::BF16);    // [channels]
  Value out = k.ptrParam("out", DType::BF16);      // [batch, channels]
  k.setConfig({{block}, /*warps=*/4, /*stages=*/1, /*vector=*/1});

  Value seq = programId(0);
  Value slot = load(slots + seq);
  Value cols = programId(1) * block + arange(0, block);
  Value inRange = cols < channels;
  Value live = inRange & (slot >= 0);

  Value rowOffset = seq.to(DType::I64) * channels;
  Value xRaw = load(x + rowOffset + cols, inRange, 0.0);
  Value taps = state + slot.to(DType::I64) * (3 * channels) + cols * 3;
  Value s0 = load(taps, live, 0.0), s1 = load(taps + 1, live, 0.0),
        s2 = load(taps + 2, live, 0.0);
  Value w = weight + cols * 4;
  auto tap = [&](int j) { return load(w + j, inRange, 0.0).to(DType::F32); };

  Value pre = load(bias + cols, inRange, 0.0).to(DType::F32) + tap(0) * s0.to(DType::F32) +
              tap(1) * s1.to(DType::F32) + tap(2) * s2.to(DType::F32) +
              tap(3) * xRaw.to(DType::F32);
  Value y = where(live, silu(pre), 0.0).to(DType::BF16);
  store(out + rowOffset + cols, y, inRange);
  store(taps, s1, live);
  store(taps + 1, s2, live);
  store(taps + 2, xRaw, live);
}

} // namespace tilejit::models
