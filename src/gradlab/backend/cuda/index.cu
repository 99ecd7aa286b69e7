// Device exec for Indexing
#include "gradlab/backend/cuda/exec.cuh"
#include "gradlab/backend/cuda/index.cuh"

template struct gradlab::gpu::Indexing<gradlab::gpu::DeviceExec>;
