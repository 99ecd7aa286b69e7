// Tensor methods: each forwards to the free function of the same name.

#include "gradlab/ops/internal/shape.hpp"

namespace gradlab {

Tensor Tensor::view(const Shape& s, Site site) const { return gradlab::view(*this, s, site); }
Tensor Tensor::reshape(const Shape& s, Site site) const { return gradlab::reshape(*this, s, site); }
Tensor Tensor::flatten(int64_t a, int64_t b, Site site) const { return gradlab::flatten(*this, a, b, site); }
Tensor Tensor::transpose(int64_t a, int64_t b, Site site) const { return gradlab::transpose(*this, a, b, site); }
Tensor Tensor::t(Site site) const {
  GRADLAB_CHECK(dim() <= 2, ShapeError, "t", "expects a tensor with <= 2 dimensions", "rank <= 2",
                "rank " + std::to_string(dim()), "use transpose(d0, d1) or permute for higher ranks");
  return dim() < 2 ? *this : gradlab::transpose(*this, 0, 1, site);
}
Tensor Tensor::permute(const Dims& d, Site site) const { return gradlab::permute(*this, d, site); }
Tensor Tensor::slice(int64_t d, int64_t s, int64_t e, int64_t st, Site site) const {
  return gradlab::slice(*this, d, s, e, st, site);
}
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l, Site site) const { return gradlab::narrow(*this, d, s, l, site); }
Tensor Tensor::select(int64_t d, int64_t i, Site site) const { return gradlab::select(*this, d, i, site); }
Tensor Tensor::operator[](int64_t i) const { return gradlab::select(*this, 0, i, Site::unknown()); }
Tensor Tensor::expand(const Shape& s, Site site) const { return gradlab::expand(*this, s, site); }
Tensor Tensor::expand_as(const Tensor& o, Site site) const { return gradlab::expand(*this, o.sizes(), site); }
Tensor Tensor::squeeze(Site site) const { return gradlab::squeeze(*this, std::nullopt, site); }
Tensor Tensor::squeeze(int64_t d, Site site) const { return gradlab::squeeze(*this, d, site); }
Tensor Tensor::unsqueeze(int64_t d, Site site) const { return gradlab::unsqueeze(*this, d, site); }
Tensor Tensor::repeat(const Shape& r, Site site) const { return gradlab::repeat(*this, r, site); }
TensorList Tensor::chunk(int64_t c, int64_t d, Site site) const { return gradlab::chunk(*this, c, d, site); }
TensorList Tensor::split(int64_t s, int64_t d, Site site) const { return gradlab::split(*this, s, d, site); }
Tensor Tensor::contiguous(Site site) const { return gradlab::contiguous(*this, site); }
Tensor Tensor::clone(Site site) const { return gradlab::clone(*this, site); }
Tensor Tensor::to(ScalarType dt, Site site) const {
  ops_detail::check_defined("to", *this);
  return ops_detail::cast_to(*this, dt, site);
}
Tensor Tensor::to(Device d, Site site) const {
  ops_detail::check_defined("to", *this);
  if (d.type == device().type) return *this;
  check_device_available(d, "to");
  return autograd::record<ops_detail::ToDevice>(site, *this, d);
}
Tensor Tensor::cuda(Site site) const { return to(Device(kCUDA), site); }
Tensor Tensor::cpu(Site site) const { return to(Device(kCPU), site); }

Tensor Tensor::add(const Tensor& o, Site site) const { return gradlab::add(*this, o, site); }
Tensor Tensor::sub(const Tensor& o, Site site) const { return gradlab::sub(*this, o, site); }
Tensor Tensor::mul(const Tensor& o, Site site) const { return gradlab::mul(*this, o, site); }
Tensor Tensor::div(const Tensor& o, Site site) const { return gradlab::div(*this, o, site); }
Tensor Tensor::add(const Tensor& o, const Scalar& alpha, Site site) const { return gradlab::add(*this, o, alpha, site); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha, Site site) const { return gradlab::sub(*this, o, alpha, site); }
Tensor Tensor::add(const Scalar& o, Site site) const { return gradlab::add(*this, o, site); }
Tensor Tensor::sub(const Scalar& o, Site site) const { return gradlab::sub(*this, o, site); }
Tensor Tensor::mul(const Scalar& o, Site site) const { return gradlab::mul(*this, o, site); }
Tensor Tensor::div(const Scalar& o, Site site) const { return gradlab::div(*this, o, site); }
Tensor Tensor::neg(Site site) const { return gradlab::neg(*this, site); }
Tensor Tensor::pow(const Scalar& e, Site site) const { return gradlab::pow(*this, e, site); }
Tensor Tensor::pow(const Tensor& e, Site site) const { return gradlab::pow(*this, e, site); }
Tensor Tensor::exp(Site site) const { return gradlab::exp(*this, site); }
Tensor Tensor::log(Site site) const { return gradlab::log(*this, site); }
Tensor Tensor::sqrt(Site site) const { return gradlab::sqrt(*this, site); }
Tensor Tensor::abs(Site site) const { return gradlab::abs(*this, site); }
Tensor Tensor::sin(Site site) const { return gradlab::sin(*this, site); }
Tensor Tensor::cos(Site site) const { return gradlab::cos(*this, site); }
Tensor Tensor::tanh(Site site) const { return gradlab::tanh(*this, site); }
Tensor Tensor::sigmoid(Site site) const { return gradlab::sigmoid(*this, site); }
Tensor Tensor::relu(Site site) const { return gradlab::relu(*this, site); }
Tensor Tensor::clamp(std::optional<Scalar> mn, std::optional<Scalar> mx, Site site) const {
  return gradlab::clamp(*this, mn, mx, site);
}
Tensor Tensor::sum(Site site) const { return gradlab::sum(*this, site); }
Tensor Tensor::sum(const Dims& d, bool k, Site site) const { return gradlab::sum(*this, d, k, site); }
Tensor Tensor::sum_to_size(const Shape& s, Site site) const { return gradlab::sum_to(*this, s, site); }
Tensor Tensor::mean(Site site) const { return gradlab::mean(*this, site); }
Tensor Tensor::mean(const Dims& d, bool k, Site site) const { return gradlab::mean(*this, d, k, site); }
Tensor Tensor::max(Site site) const { return gradlab::max(*this, site); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t d, bool k, Site site) const { return gradlab::max(*this, d, k, site); }
Tensor Tensor::min(Site site) const { return gradlab::min(*this, site); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t d, bool k, Site site) const { return gradlab::min(*this, d, k, site); }
Tensor Tensor::max(const Tensor& o, Site site) const { return gradlab::maximum(*this, o, site); }
Tensor Tensor::min(const Tensor& o, Site site) const { return gradlab::minimum(*this, o, site); }
Tensor Tensor::cumsum(int64_t d, std::optional<ScalarType> dt, Site site) const { return gradlab::cumsum(*this, d, dt, site); }
Tensor Tensor::argmax(std::optional<int64_t> d, bool k) const { return gradlab::argmax(*this, d, k); }
Tensor Tensor::var(const Dims& d, int64_t c, bool k, Site site) const { return gradlab::var(*this, d, c, k, site); }
Tensor Tensor::std(const Dims& d, int64_t c, bool k, Site site) const { return gradlab::std(*this, d, c, k, site); }
Tensor Tensor::logsumexp(const Dims& d, bool k, Site site) const { return gradlab::logsumexp(*this, d, k, site); }
Tensor Tensor::matmul(const Tensor& o, Site site) const { return gradlab::matmul(*this, o, site); }
Tensor Tensor::sum(int64_t d, bool k, Site site) const { return gradlab::sum(*this, d, k, site); }
Tensor Tensor::sum(ScalarType t, Site site) const { return gradlab::sum(*this, t, site); }
Tensor Tensor::mean(int64_t d, bool k, Site site) const { return gradlab::mean(*this, d, k, site); }
Tensor Tensor::logsumexp(int64_t d, bool k, Site site) const { return gradlab::logsumexp(*this, d, k, site); }
Tensor Tensor::norm(const Scalar& p, Site site) const { return gradlab::norm(*this, p.to_double(), site); }
Tensor Tensor::norm(const Scalar& p, int64_t d, bool k, Site site) const { return gradlab::norm(*this, p, d, k, site); }
Tensor Tensor::norm(const Scalar& p, const Dims& d, bool k, Site site) const {
  return gradlab::norm(*this, p, d, k, site);
}
Tensor Tensor::all() const { return gradlab::all(*this); }
Tensor Tensor::all(int64_t d, bool k) const { return gradlab::all(*this, d, k); }
Tensor Tensor::any() const { return gradlab::any(*this); }
Tensor Tensor::any(int64_t d, bool k) const { return gradlab::any(*this, d, k); }
Tensor Tensor::mm(const Tensor& o, Site site) const { return gradlab::mm(*this, o, site); }
Tensor Tensor::bmm(const Tensor& o, Site site) const { return gradlab::bmm(*this, o, site); }
Tensor Tensor::softmax(int64_t d, Site site) const { return gradlab::softmax(*this, d, site); }
Tensor Tensor::log_softmax(int64_t d, Site site) const { return gradlab::log_softmax(*this, d, site); }
Tensor Tensor::index_select(int64_t d, const Tensor& i, Site site) const { return gradlab::index_select(*this, d, i, site); }
Tensor Tensor::gather(int64_t d, const Tensor& i, Site site) const { return gradlab::gather(*this, d, i, site); }
Tensor Tensor::scatter_add(int64_t d, const Tensor& i, const Tensor& s, Site site) const {
  return gradlab::scatter_add(*this, d, i, s, site);
}
Tensor Tensor::masked_fill(const Tensor& m, const Scalar& v, Site site) const { return gradlab::masked_fill(*this, m, v, site); }
Tensor Tensor::gt(const Scalar& o) const { return gradlab::gt(*this, o); }
Tensor Tensor::lt(const Scalar& o) const { return gradlab::lt(*this, o); }
Tensor Tensor::eq(const Tensor& o) const { return gradlab::eq(*this, o); }
Tensor Tensor::eq(const Scalar& o) const { return gradlab::eq(*this, o); }
Tensor Tensor::ne(const Tensor& o) const { return gradlab::ne(*this, o); }
Tensor Tensor::ne(const Scalar& o) const { return gradlab::ne(*this, o); }

}  // namespace gradlab
