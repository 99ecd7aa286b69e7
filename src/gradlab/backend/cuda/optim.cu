// Fused optimizer updates on the GPU (the bodies are in optim.cuh).
#include "gradlab/backend/cuda/exec.cuh"
#include "gradlab/backend/cuda/optim.cuh"

template struct gradlab::gpu::Optim<gradlab::gpu::DeviceExec>;
