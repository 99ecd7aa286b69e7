// Elementwise kernels on the GPU (the bodies are in elementwise.cuh).
#include "gradlab/backend/cuda/exec.cuh"
#include "gradlab/backend/cuda/elementwise.cuh"

template struct gradlab::gpu::Elementwise<gradlab::gpu::DeviceExec>;
