// Registration of the model kernels with their constants (NemotronH defaults).
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

namespace {
// Constants more than one kernel takes for tilejit.ops' callers (PyTorch's
// conventions); their defaults build the kernels the plans use.
KernelConstant aLog() {
  return {"a_log", 1, "1: the A parameter is A_log (A = -exp(A_log)); 0: A itself"};
}
KernelConstant dtSoftplus() {
  return {"dt_softplus", 1,
          "1: dt' = softplus(dt + dt_bias); 0: dt' = dt + dt_bias (then the clamp)"};
}
KernelConstant yF32() { return {"y_f32", 0, "1: store y as f32 instead of bf16"}; }
KernelConstant stateLayout() {
  return {"state_layout", 0,
          "conv page: 0 [slots, channels, 3]; 1 channel-last, [slots, 3, channels] in memory"};
}
} // namespace

llvm::Error registerModelKernels(KernelRegistry &registry) {
  if (auto err = registry.add(
          {"gated_rmsnorm",
           "R6 gated group RMSNorm: bf16(w * bf16(y*silu(z) * rsqrt(mean(v^2)+eps)))",
           {{"width", 4096, "channels per row (I = H*P)"},
            {"group_size", 512, "channels per norm group (I / G)"},
            {"fp8_out", 0, "1: store e4m3(out / input_scale) for an FP8 out_proj"},
            {"z_stride", 0, "row stride of z; 0: width (10304 reads z in place from in_proj's output)"},
            {"gate", 1, "0: no z, v = y (a plain group RMSNorm)"}},
           buildGatedRmsNorm}))
    return err;
  if (auto err = registry.add({"quantize_e4m3",
                               "R1's static activation quant: e4m3(x * (1 / s_x)), bf16 in",
                               {{"width", 2688, "columns per row"},
                                {"block", 1024, "columns per program"},
                                {"scale_ptr", 0, "1: input_scale is a one-element f32 tensor"}},
                               buildQuantizeE4m3}))
    return err;
  if (auto err = registry.add(
          {"in_proj_conv",
           "decode in_proj (R1 FP8 W8A8 or R1b bf16) -> split -> conv update (R3d), fused",
           {{"hidden", 2688, "model hidden size (K)"},
            {"inner", 4096, "z columns, I = H*P"},
            {"channels", 6144, "xBC columns, I + 2*G*N"},
            {"heads", 64, "dt columns, H"},
            {"fp8", 1, "1: e4m3 weight, static activation quant; 0: bf16 weight"},
            {"block_m", 1, "rows per program: 1 (GEMV) or >= 16 (tensor cores)"},
            {"block_n", 16, "output columns per program", {8, 32}},
            {"block_k", 128, "K per step", {64}},
            {"loads_in_flight", 21, "GEMV: K steps whose weight loads issue together", {7, 14}},
            {"stages", 3, "tensor cores: shared-memory buffers of the K loop"},
            {"warps", 4, "warps per program", {2, 8}},
            {"direct", 0, "1: tensor cores for any batch, operands loaded straight into "
                          "their fragments (block_m a multiple of 16)"},
            {"split_k", 4, "direct: warp groups that each sum a part of K (divides warps)"}},
           buildInProjConv}))
    return err;
  if (auto err = registry.add({"ssm_update",
                               "R5d selective state update, SSM page updated in place",
                               {{"heads", 64, "SSM heads (H)"},
                                {"head_dim", 64, "head dim (P)"},
                                {"state", 128, "state size (N)"},
                                {"groups", 8, "B/C groups (G)"},
                                {"block_p", 16, "state rows (p) per program"},
                                {"warps", 4, "warps per program"},
                                aLog(),
                                dtSoftplus(),
                                {"dt_stride", 0, "row stride of dt; 0: heads"},
                                yF32(),
                                {"dst_slots", 0, "1: read the state from slots, write it to dst_slots"}},
                               buildSsmUpdate}))
    return err;
  if (auto err = registry.add({"out_proj",
                               "decode out_proj: R1 with e4m3 activations, or R1b bf16",
                               {{"inner", 4096, "K, I = H*P"},
                                {"hidden", 2688, "output columns"},
                                {"fp8", 1, "1: e4m3 weight and activation; 0: bf16"},
                                {"block_m", 1, "rows per program: 1 (GEMV) or >= 16 (tensor cores)"},
                                {"block_n", 4, "output columns per program"},
                                {"block_k", 512, "K per step"},
                                {"loads_in_flight", 8, "GEMV: K steps whose weight loads issue together"},
                                {"stages", 3, "tensor cores: shared-memory buffers of the K loop"},
                                {"warps", 4, "warps per program"},
                                {"direct", 0, "1: tensor cores for any batch, operands loaded "
                                              "straight into their fragments"},
                                {"split_k", 4, "direct: warp groups that each sum a part of K"},
                                {"out_f32", 0, "1: store y as f32 instead of bf16"},
                                {"scale_ptr", 0, "fp8: 1: s_x and s_w as one-element f32 tensors (scale_a, scale_b)"}},
                               buildOutProj}))
    return err;
  if (auto err = registry.add(
          {"ssd_prefill",
           "R5p chunked SSD over a packed varlen stream, SSM page read and written back",
           {{"heads", 64, "SSM heads (H)"},
            {"head_dim", 64, "head dim (P)"},
            {"state", 128, "state size (N)"},
            {"groups", 8, "B/C groups (G)"},
            {"chunk", 32, "tokens per chunk (R5p is invariant to it; the varlen metadata must use it)"},
            {"dt_stride", 10304, "row stride of dt (in_proj's output row: z | xBC | dt)"},
            {"dt_col", 10240, "first dt column in that row"},
            {"block_p", 32, "state rows (p) per program", {16, 64}},
            {"warps", 4, "warps per program", {8}},
            aLog(),
            dtSoftplus(),
            yF32()},
           buildSsdPrefill}))
    return err;
  if (auto err = registry.add(
          {"conv_prefill",
           "R3 causal conv1d + SiLU over a packed varlen batch, conv pages read and written",
           {{"inner", 4096, "z columns before xBC in zxbcdt (I = H*P)"},
            {"channels", 6144, "conv channels (I + 2*G*N)"},
            {"heads", 64, "dt columns after xBC in zxbcdt (H)"},
            {"block_t", 64, "tokens per chunk: a power of two >= 4 (the host chunks by it)"},
            {"block_c", 1024, "channels per program (256 * warps: 16-byte accesses)"},
            {"rows_per_step", 8, "token rows whose loads issue together (divides block_t)"},
            {"fast_silu", 1, "1: silu as x * rsqrt(1 + e^-x)^2, no division; 0: the IEEE quotient"},
            {"warps", 4, "warps per program"},
            stateLayout()},
           buildConvPrefill}))
    return err;
  return registry.add({"conv_update",
                       "R3d causal conv1d update + SiLU, conv state shifted in place",
                       {{"channels", 6144, "conv channels (I + 2*G*N)"},
                        {"block", 256, "channels per program"},
                        {"x_stride", 0, "row stride of x; 0: channels (x read in place from a wider row)"},
                        stateLayout()},
                       buildConvUpdate});
}

} // namespace tilejit::models
