// Activation modules (nn/activation.hpp): each forward is its nn::functional form with the
// module's options. ReLU, LeakyReLU, Softplus, GELU, Tanh, Sigmoid, Softmax and LogSoftmax are in
// nn/layers.cpp, whose lines the lessons quote in error messages (ReLU's forward at line 119).

#include "gradlab/nn/activation.hpp"

#include <ostream>

#include "gradlab/autograd/grad_mode.hpp"
#include "gradlab/core/factories.hpp"
#include "gradlab/nn/functional.hpp"

namespace gradlab::nn {

namespace F = functional;

Tensor ReLU6Impl::forward(const Tensor& x) { return F::relu6(x, options); }
void ReLU6Impl::pretty_print(std::ostream& os) const {
  os << "ReLU6(" << (options.inplace() ? "inplace=true" : "") << ")";
}

Tensor ELUImpl::forward(const Tensor& x) { return F::elu(x, options); }
void ELUImpl::pretty_print(std::ostream& os) const {
  os << "ELU(alpha=" << options.alpha() << (options.inplace() ? ", inplace=true" : "") << ")";
}
Tensor SELUImpl::forward(const Tensor& x) { return F::selu(x, options); }
void SELUImpl::pretty_print(std::ostream& os) const {
  os << "SELU(" << (options.inplace() ? "inplace=true" : "") << ")";
}
Tensor CELUImpl::forward(const Tensor& x) { return F::celu(x, options); }
void CELUImpl::pretty_print(std::ostream& os) const {
  os << "CELU(alpha=" << options.alpha() << (options.inplace() ? ", inplace=true" : "") << ")";
}

HardtanhImpl::HardtanhImpl(const HardtanhOptions& o) : options(o) {
  GRADLAB_CHECK(o.max_val() > o.min_val(), ValueError, "Hardtanh", "max_val must be greater than min_val",
                "max_val > min_val", std::to_string(o.max_val()) + " <= " + std::to_string(o.min_val()));
}
Tensor HardtanhImpl::forward(const Tensor& x) { return F::hardtanh(x, options); }
void HardtanhImpl::pretty_print(std::ostream& os) const {
  os << "Hardtanh(min_val=" << options.min_val() << ", max_val=" << options.max_val()
     << (options.inplace() ? ", inplace=true" : "") << ")";
}

Tensor ThresholdImpl::forward(const Tensor& x) { return F::threshold(x, options); }
void ThresholdImpl::pretty_print(std::ostream& os) const {
  os << "Threshold(threshold=" << options.threshold() << ", value=" << options.value()
     << (options.inplace() ? ", inplace=true" : "") << ")";
}

Tensor GLUImpl::forward(const Tensor& x) { return F::glu(x, options); }
void GLUImpl::pretty_print(std::ostream& os) const { os << "GLU(dim=" << options.dim() << ")"; }

PReLUImpl::PReLUImpl(const PReLUOptions& o) : options(o) {
  GRADLAB_CHECK(o.num_parameters() >= 1, ValueError, "PReLU", "num_parameters must be positive",
                "1, or the input's channel count", std::to_string(o.num_parameters()));
  weight = register_parameter("weight", full({o.num_parameters()}, o.init()));
}
void PReLUImpl::reset_parameters() {
  NoGradGuard ng;
  weight.fill_(options.init());
}
Tensor PReLUImpl::forward(const Tensor& x) { return prelu(x, weight); }
void PReLUImpl::pretty_print(std::ostream& os) const {
  os << "PReLU(num_parameters=" << options.num_parameters() << ")";
}

Tensor SiLUImpl::forward(const Tensor& x) { return silu(x); }
Tensor MishImpl::forward(const Tensor& x) { return mish(x); }
Tensor SoftsignImpl::forward(const Tensor& x) { return F::softsign(x); }
Tensor TanhshrinkImpl::forward(const Tensor& x) { return F::tanhshrink(x); }
Tensor LogSigmoidImpl::forward(const Tensor& x) { return log_sigmoid(x); }

Tensor SoftminImpl::forward(const Tensor& x) { return F::softmin(x, options.dim()); }
void SoftminImpl::pretty_print(std::ostream& os) const {
  os << "Softmin(dim=" << options.dim() << ")";
}

Tensor HardshrinkImpl::forward(const Tensor& x) { return F::hardshrink(x, options); }
void HardshrinkImpl::pretty_print(std::ostream& os) const { os << "Hardshrink(" << options.lambda() << ")"; }
Tensor SoftshrinkImpl::forward(const Tensor& x) { return F::softshrink(x, options); }
void SoftshrinkImpl::pretty_print(std::ostream& os) const { os << "Softshrink(" << options.lambda() << ")"; }

}  // namespace gradlab::nn
