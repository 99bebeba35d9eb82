// R3d (docs/numerics.md#r3d-conv-update-decode): one token per sequence through the
// causal depthwise conv and SiLU; the conv state page [slots, channels, 3] (oldest
// tap first) is shifted in place. A negative slot is a padding row: state untouched,
// output 0.
#include "Parts.h"
#include "tilejit/models/Kernels.h"

namespace tilejit::models {

void buildConvUpdate(Kernel &k, const Specialization &spec) {
  const int64_t channels = spec.get("channels"), block = spec.get("block");
  Value x = k.ptrParam("x", DType::BF16, {"?", channels});          // [batch, channels]
  Value state = k.ptrParam("conv_state", DType::BF16, {"?", channels, 3}); // [slots, channels, 3]
  Value slots = k.ptrParam("slots", DType::I32, {"?"});   // [batch]
  Value weight = k.ptrParam("weight", DType::BF16, {channels, 4}); // [channels, 4]
  Value bias = k.ptrParam("bias", DType::BF16, {channels});    // [channels]
  Value out = k.ptrParam("out", DType::BF16, {"?", channels});      // [batch, channels]
  k.setConfig({{block}, /*warps=*/4, /*stages=*/1, /*vector=*/1});

  Value seq = programId(0);
  Value slot = load(slots + seq);
  Value cols = programId(1) * block + arange(0, block);
  Value inRange = cols < channels;
  Value rowOffset = seq.to(DType::I64) * channels;
  Value xt = load(x + rowOffset + cols, inRange, 0.0);
  ConvOperands conv{state, weight, bias, channels};
  store(out + rowOffset + cols, convUpdate(conv, slot, slot >= 0, cols, inRange, xt), inRange);
}

} // namespace tilejit::models
