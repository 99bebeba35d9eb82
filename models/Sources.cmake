# The model sources that another build compiles too: the fuzz build
# (tests/fuzz) takes the kernels and the checkpoint loader without the plans,
# the reference and the GPU runner that TilejitModels would also pull in. One
# list, so that a new kernel source reaches both builds. Paths are relative to
# this folder.
set(TILEJIT_MODEL_KERNEL_SOURCES
  examples/ExampleKernels.cpp
  mamba2/CheckVarlen.cpp
  mamba2/VarlenPieces.cpp
  mamba2/ChunkGemv.cpp
  mamba2/ConvForms.cpp
  mamba2/ConvPrefill.cpp
  mamba2/ConvUpdate.cpp
  mamba2/ConvUpdateForms.cpp
  mamba2/GatedRmsNorm.cpp
  mamba2/InProjConv.cpp
  mamba2/NormPrologue.cpp
  mamba2/OutProj.cpp
  mamba2/Parts.cpp
  mamba2/Quantize.cpp
  mamba2/Register.cpp
  mamba2/SplitKSum.cpp
  mamba2/SsdChunk.cpp
  mamba2/SsdChunkScan.cpp
  mamba2/SsdPrefill.cpp
  mamba2/SsdStatePass.cpp
  mamba2/SsdWalk.cpp
  mamba2/SsmRounding.cpp
  mamba2/SsmUpdate.cpp
  mamba2/SsmUpdateConstants.cpp
  mamba2/SkinnyProjection.cpp
)
set(TILEJIT_MODEL_LOADER_SOURCES
  nemotron_h/Checkpoint.cpp
  nemotron_h/Config.cpp
  nemotron_h/LayerWeights.cpp
  nemotron_h/Quantization.cpp
  nemotron_h/Safetensors.cpp
  nemotron_h/Synthetic.cpp
  nemotron_h/TensorNames.cpp
  reference/HostTensor.cpp
)
