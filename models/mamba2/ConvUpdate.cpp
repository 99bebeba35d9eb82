// R3d (docs/numerics.md#r3d-conv-update-decode): one token per sequence through the
// causal depthwise conv and SiLU; the conv state page [slots, channels, 3] (oldest tap
// first) is shifted in place. A negative slot is a padding row: state untouched, output
// 0. `x_stride` and `x_col` read x in place from a wider row (decode's in_proj
// output, z | xBC | dt); `state_layout` 1 takes vLLM's
// channel-last page ([slots, 3, channels] in memory).
#include "Parts.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

void buildConvUpdate(Kernel &k, const Specialization &spec) {
  const int64_t channels = spec.get("channels"), block = spec.get("block");
  const int64_t xStride = spec.get("x_stride") ? spec.get("x_stride") : channels;
  const int64_t xCol = spec.get("x_col");
  const bool channelLast = spec.get("state_layout") != 0;
  Value x =
      k.ptrParam("x", DType::BF16,
                 {"?", xStride}); // [batch, x_stride]: x in columns x_col + [0, channels)
  Value state = k.ptrParam(
      "conv_state", DType::BF16,
      channelLast ? std::vector<ParamDim>{"?", 3, channels}
                  : std::vector<ParamDim>{"?", channels, 3});      // a page per slot
  Value slots = k.ptrParam("slots", DType::I32, {"?"});            // [batch]
  Value weight = k.ptrParam("weight", DType::BF16, {channels, 4}); // [channels, 4]
  Value bias = k.ptrParam("bias", DType::BF16, {channels});        // [channels]
  Value out = k.ptrParam("out", DType::BF16, {"?", channels});     // [batch, channels]
  k.setConfig({{block}, /*warps=*/4, /*stages=*/1, /*vector=*/1});

  Value seq = programId(0);
  Value slot = load(slots + seq);
  Value cols = programId(1) * block + arange(0, block);
  Value inRange = cols < channels;
  Value seq64 = seq.to(DType::I64);
  Value xt = load(x + seq64 * xStride + (xCol ? cols + xCol : cols), inRange, 0.0);
  ConvOperands conv{state, weight, bias, channels, channelLast};
  store(out + seq64 * channels + cols,
        convUpdate(conv, slot, slot >= 0, cols, inRange, xt), inRange);
}

} // namespace tilejit::models
