// Fused programs on CUDA: source generation (always built), NVRTC compilation and launch (only
// with the CUDA backend). Compiled kernels are cached by source text.

#include "gradlab/backend/cuda/fused.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>

#include "gradlab/backend/cuda/runtime.hpp"
#include "gradlab/core/tensor_impl.hpp"

#if GRADLAB_HAVE_CUDA
#include <cuda_runtime.h>
#include <nvrtc.h>

#include "gradlab/backend/cuda/cuda_check.hpp"
#endif

namespace gradlab::kern {

namespace {

using Kind = FusedStep::Kind;
using Reduce = FusedOutput::Reduce;

// The formulas as device functions inside namespace gm, where the names of the formulas (exp,
// select, isnan ...) find gm's float or double versions first.
std::string preamble(ScalarType dt) {
  const bool f = dt == kFloat32;
  const std::string V = f ? "float" : "double", s = f ? "f" : "";
  std::ostringstream os;
  os << "namespace gm {\ntypedef " << V << " V;\n"
     << "__device__ __forceinline__ V select(bool c, V a, V b) { return c ? a : b; }\n"
     << "__device__ __forceinline__ bool isnan(V x) { return x != x; }\n";
#define GRADLAB_MATH_FN_(fn) \
  os << "__device__ __forceinline__ V " #fn "(V x) { return ::" #fn << s << "(x); }\n";
  GRADLAB_MATH_FUNCTIONS(GRADLAB_MATH_FN_)
#undef GRADLAB_MATH_FN_
  os << "__device__ __forceinline__ V abs(V x) { return ::fabs" << s << "(x); }\n"
     << "__device__ __forceinline__ V pow(V x, V y) { return ::pow" << s << "(x, y); }\n";
#define GRADLAB_UNARY_SRC_(name, kind, formula) \
  os << "__device__ __forceinline__ V u_" #name "(V x, V p, V q) { (void)p; (void)q; return " #formula "; }\n";
#define GRADLAB_BINARY_SRC_(name, kind, formula) \
  os << "__device__ __forceinline__ V b_" #name "(V a, V b) { return " #formula "; }\n";
  GRADLAB_UNARY_OPS(GRADLAB_UNARY_SRC_)
  GRADLAB_BINARY_OPS(GRADLAB_BINARY_SRC_)
  GRADLAB_COMPARE_OPS(GRADLAB_BINARY_SRC_)
#undef GRADLAB_UNARY_SRC_
#undef GRADLAB_BINARY_SRC_
  os << "}  // namespace gm\n";
  return os.str();
}

const char* unary_name(int op) {
  switch (static_cast<math::Unary>(op)) {
#define GRADLAB_CASE_(name, kind, formula) case math::Unary::name: return #name;
    GRADLAB_UNARY_OPS(GRADLAB_CASE_)
#undef GRADLAB_CASE_
    default: throw Error("fused_cuda_source: unary op " + std::to_string(op) + " has no formula");
  }
}
const char* binary_name(int op) {
  switch (static_cast<math::Binary>(op)) {
#define GRADLAB_CASE_(name, kind, formula) case math::Binary::name: return #name;
    GRADLAB_BINARY_OPS(GRADLAB_CASE_)
    GRADLAB_COMPARE_OPS(GRADLAB_CASE_)
#undef GRADLAB_CASE_
  }
  return "";
}

std::string literal(double v) {
  std::ostringstream os;
  os.precision(17);
  if (std::isinf(v)) os << (v > 0 ? "(1.0/0.0)" : "(-1.0/0.0)");
  else os << v;
  return "gm::V(" + os.str() + ")";
}

}  // namespace

std::string fused_cuda_source(const FusedProgram& prog, const std::vector<Tensor>& inputs) {
  const Shape& shape = prog.shape;
  const int64_t n = numel_of(shape), D = shape.empty() ? 1 : shape.back();
  std::ostringstream os;
  os << preamble(prog.dtype) << "extern \"C\" __global__ void gradlab_fused(";
  for (size_t k = 0; k < inputs.size(); ++k) os << "const gm::V* __restrict__ in" << k << ", ";
  for (size_t k = 0; k < prog.outputs.size(); ++k) os << (k ? ", " : "") << "gm::V* out" << k;
  os << ") {\n  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < " << n
     << "LL; i += (long long)gridDim.x * blockDim.x) {\n";
  for (size_t s = 0; s < prog.steps.size(); ++s) {
    const FusedStep& st = prog.steps[s];
    os << "    const gm::V r" << s << " = ";
    switch (st.kind) {
      case Kind::Input: {
        const Tensor& x = inputs.at(static_cast<size_t>(st.index));
        if (x.is_contiguous()) {
          os << "in" << st.index << "[i]";
          break;
        }
        // Element offset of flat index i through the view's strides (0 where broadcast).
        os << "in" << st.index << "[0";
        int64_t div = 1;
        for (size_t d = shape.size(); d-- > 0;) {
          if (x.strides()[d] != 0) os << " + (i / " << div << "LL % " << shape[d] << "LL) * " << x.strides()[d] << "LL";
          div *= shape[d];
        }
        os << "]";
        break;
      }
      case Kind::Const: os << literal(st.p); break;
      case Kind::Unary:
        os << "gm::u_" << unary_name(st.op) << "(r" << st.a << ", " << literal(st.p) << ", " << literal(st.q) << ")";
        break;
      case Kind::Binary: os << "gm::b_" << binary_name(st.op) << "(r" << st.a << ", r" << st.b << ")"; break;
      case Kind::Compare:
        os << "(gm::b_" << binary_name(st.op) << "(r" << st.a << ", r" << st.b << ") ? gm::V(1) : gm::V(0))";
        break;
      case Kind::Select: os << "(r" << st.a << " != gm::V(0) ? r" << st.b << " : r" << st.c << ")"; break;
    }
    os << ";\n";
  }
  for (size_t k = 0; k < prog.outputs.size(); ++k) {
    const FusedOutput& o = prog.outputs[k];
    if (o.reduce == Reduce::None) os << "    out" << k << "[i] = r" << o.reg << ";\n";
    else
      os << "    atomicAdd(out" << k << (o.reduce == Reduce::All ? "" : " + i / " + std::to_string(D) + "LL")
         << ", r" << o.reg << " * " << literal(o.scale) << ");\n";
  }
  os << "  }\n}\n";
  return os.str();
}

#if GRADLAB_HAVE_CUDA

bool nvrtc_available() { return true; }

std::string nvrtc_compile(const std::string& source, int arch) {
  nvrtcProgram p;
  auto check = [](nvrtcResult r, const char* call) {
    if (r != NVRTC_SUCCESS)
      throw Error(error_message("nvrtc", std::string(call) + " failed", "NVRTC_SUCCESS", nvrtcGetErrorString(r)));
  };
  check(nvrtcCreateProgram(&p, source.c_str(), "gradlab_fused.cu", 0, nullptr, nullptr), "nvrtcCreateProgram");
  const std::string arch_opt = "--gpu-architecture=compute_" + std::to_string(arch);
  const char* opts[] = {arch_opt.c_str(), "--std=c++17"};
  const nvrtcResult r = nvrtcCompileProgram(p, 2, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(p, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(p, log.data());
    nvrtcDestroyProgram(&p);
    throw Error(error_message("nvrtc", "the generated kernel does not compile", "valid CUDA C++", log));
  }
  size_t n = 0;
  check(nvrtcGetPTXSize(p, &n), "nvrtcGetPTXSize");
  std::string ptx(n, '\0');
  check(nvrtcGetPTX(p, ptx.data()), "nvrtcGetPTX");
  nvrtcDestroyProgram(&p);
  return ptx;
}

bool cuda_fused_supported(std::string* why) {
  if (cuda_rt::backend() == cuda_rt::Backend::Device) return true;
  if (why) *why = "no CUDA device to launch a fused kernel on (the emulator runs no generated kernels)";
  return false;
}

std::vector<Tensor> run_cuda_fused(const FusedProgram& prog, const std::vector<Tensor>& inputs) {
  static std::mutex mu;
  static std::map<std::string, cudaKernel_t> cache;
  const std::string src = fused_cuda_source(prog, inputs);
  cudaKernel_t kernel = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(src);
    if (it == cache.end()) {
      int dev = 0, major = 0, minor = 0;
      GRADLAB_CUDA_CHECK(cudaGetDevice(&dev), "fused kernel");
      GRADLAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "fused kernel");
      GRADLAB_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "fused kernel");
      const std::string ptx = nvrtc_compile(src, major * 10 + minor);
      cudaLibrary_t lib = nullptr;
      GRADLAB_CUDA_CHECK(cudaLibraryLoadData(&lib, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0), "fused kernel");
      GRADLAB_CUDA_CHECK(cudaLibraryGetKernel(&kernel, lib, "gradlab_fused"), "fused kernel");
      cache.emplace(src, kernel);
    } else {
      kernel = it->second;
    }
  }
  const Device dev = inputs.empty() ? Device(kCUDA) : inputs[0].device();
  std::vector<Tensor> outs;
  std::vector<void*> ptrs;
  for (const auto& t : inputs) ptrs.push_back(static_cast<char*>(t.impl()->data()));
  for (const auto& o : prog.outputs) {
    Shape s = prog.shape;
    if (o.reduce == Reduce::All) s = {};
    if (o.reduce == Reduce::LastDim && !s.empty()) s.pop_back();
    outs.push_back(make_tensor(s, prog.dtype, dev));
    if (o.reduce != Reduce::None)
      cuda_rt::memset(outs.back().impl()->data(), 0, static_cast<size_t>(outs.back().numel()) * element_size(prog.dtype), "fused kernel");
    ptrs.push_back(outs.back().impl()->data());
  }
  std::vector<void*> args;
  for (auto& p : ptrs) args.push_back(&p);
  const int64_t n = numel_of(prog.shape);
  const unsigned block = 256, grid = static_cast<unsigned>(std::min<int64_t>((n + block - 1) / block, 65535 * 8));
  if (n > 0)
    GRADLAB_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(grid), dim3(block), args.data(), 0, nullptr),
                       "fused kernel");
  if (cuda_rt::sync_each_launch()) GRADLAB_CUDA_CHECK(cudaDeviceSynchronize(), "fused kernel");
  return outs;
}

#else

bool nvrtc_available() { return false; }
std::string nvrtc_compile(const std::string&, int) {
  throw DeviceError(error_message("nvrtc", "gradlab was built without the CUDA backend", "a CUDA build",
                                  "a CPU-only build", "install the CUDA toolkit and configure again"));
}
bool cuda_fused_supported(std::string* why) {
  if (why) *why = "gradlab was built without the CUDA backend (no NVRTC)";
  return false;
}
std::vector<Tensor> run_cuda_fused(const FusedProgram&, const std::vector<Tensor>&) {
  throw DeviceError(error_message("fused kernel", "gradlab was built without the CUDA backend",
                                  "a CUDA build", "a CPU-only build"));
}

#endif

}  // namespace gradlab::kern
