// Device exec for NN
#include "gradlab/backend/cuda/exec.cuh"
#include "gradlab/backend/cuda/nn.cuh"

template struct gradlab::gpu::NN<gradlab::gpu::DeviceExec>;
