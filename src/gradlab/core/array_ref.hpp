#pragma once
// ArrayRef<T>: a non-owning view of contiguous elements, as LibTorch's c10::ArrayRef (what
// torch::data's Dataset::get_batch takes). It is made implicitly from a std::vector, an
// initializer list, one element or a pointer and a length; the elements must outlive the view.

#include <cstddef>
#include <initializer_list>
#include <vector>

namespace gradlab {

template <class T>
class ArrayRef {
 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;
  using size_type = std::size_t;

  constexpr ArrayRef() = default;
  /// One element (it must outlive the view).
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}  // NOLINT: implicit, as c10
  constexpr ArrayRef(const T* data, std::size_t size) : data_(data), size_(size) {}
  template <class A>
  ArrayRef(const std::vector<T, A>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  /// NOTE: the list's elements live until the end of the full expression only.
  constexpr ArrayRef(const std::initializer_list<T>& list)  // NOLINT
      : data_(first_of(list)), size_(list.size()) {}

  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T* data() const { return data_; }
  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T& operator[](std::size_t i) const { return data_[i]; }
  constexpr const T& front() const { return data_[0]; }
  constexpr const T& back() const { return data_[size_ - 1]; }
  /// A copy of the elements.
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }

 private:
  static constexpr const T* first_of(const std::initializer_list<T>& list) {
    return list.size() == 0 ? nullptr : list.begin();
  }
  const T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace gradlab
