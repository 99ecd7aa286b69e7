// The host emulator: every CUDA kernel family of gradlab, instantiated with HostExec so each
// kernel body runs on the CPU, one thread index after another (see exec.hpp). Compiled in every
// build, with or without nvcc: this is how CI checks the kernels' index math without a GPU.
#include "gradlab/backend/cuda/blas.cuh"
#include "gradlab/backend/cuda/elementwise.cuh"
#include "gradlab/backend/cuda/index.cuh"
#include "gradlab/backend/cuda/nn.cuh"
#include "gradlab/backend/cuda/reduce.cuh"

template struct gradlab::gpu::Elementwise<gradlab::gpu::HostExec>;
template struct gradlab::gpu::Reductions<gradlab::gpu::HostExec>;
template struct gradlab::gpu::Indexing<gradlab::gpu::HostExec>;
template struct gradlab::gpu::Blas<gradlab::gpu::HostExec>;
template struct gradlab::gpu::NN<gradlab::gpu::HostExec>;
#include "gradlab/backend/cuda/optim.cuh"
template struct gradlab::gpu::Optim<gradlab::gpu::HostExec>;
