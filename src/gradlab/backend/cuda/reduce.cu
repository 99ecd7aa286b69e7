// Device exec for Reductions
#include "gradlab/backend/cuda/exec.cuh"
#include "gradlab/backend/cuda/reduce.cuh"

template struct gradlab::gpu::Reductions<gradlab::gpu::DeviceExec>;
