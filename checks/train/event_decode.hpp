#pragma once
// A tiny protobuf *decoder* for the tests (independent of the encoder in src/): splits a message
// into (field number, wire type, value) triples, enough to read an Event back.

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradlab::testing_train {

struct Field {
  int number = 0;
  int wire = 0;
  uint64_t u = 0;     // VARINT, I64 and I32 bits
  std::string bytes;  // LEN
  double as_double() const {
    double d;
    std::memcpy(&d, &u, 8);
    return d;
  }
  float as_float() const {
    const uint32_t b = static_cast<uint32_t>(u);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
};

inline std::vector<Field> decode(const std::string& m) {
  std::vector<Field> out;
  size_t i = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (i >= m.size()) throw std::runtime_error("decode: truncated varint");
      const auto b = static_cast<unsigned char>(m[i++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    throw std::runtime_error("decode: varint too long");
  };
  auto fixed = [&](int n) {
    if (i + n > m.size()) throw std::runtime_error("decode: truncated fixed field");
    uint64_t v = 0;
    for (int k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<unsigned char>(m[i + k])) << (8 * k);
    i += n;
    return v;
  };
  while (i < m.size()) {
    const uint64_t key = varint();
    Field f;
    f.number = static_cast<int>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) {
      f.u = varint();
    } else if (f.wire == 1) {
      f.u = fixed(8);
    } else if (f.wire == 5) {
      f.u = fixed(4);
    } else if (f.wire == 2) {
      const uint64_t n = varint();
      if (i + n > m.size()) throw std::runtime_error("decode: truncated bytes");
      f.bytes = m.substr(i, n);
      i += n;
    } else {
      throw std::runtime_error("decode: unknown wire type " + std::to_string(f.wire));
    }
    out.push_back(f);
  }
  return out;
}

inline const Field* find_opt(const std::vector<Field>& fs, int number) {
  for (const auto& f : fs)
    if (f.number == number) return &f;
  return nullptr;
}
/// The first field `number`; throws when there is none (a test failure, not a crash).
inline const Field* find(const std::vector<Field>& fs, int number) {
  const Field* f = find_opt(fs, number);
  if (!f) throw std::runtime_error("decode: no field " + std::to_string(number));
  return f;
}

/// A scalar event: Event{wall_time 1, step 2, summary 5{value 1{tag 1, simple_value 2}}}.
struct ScalarEvent {
  double wall_time = 0;
  int64_t step = 0;
  std::string tag;
  float value = 0;
};
inline ScalarEvent decode_scalar_event(const std::string& event) {
  const auto e = decode(event);
  ScalarEvent s;
  if (const Field* f = find_opt(e, 1)) s.wall_time = f->as_double();
  if (const Field* f = find_opt(e, 2)) s.step = static_cast<int64_t>(f->u);
  const Field* summary = find(e, 5);
  const auto v = decode(find(decode(summary->bytes), 1)->bytes);
  s.tag = find(v, 1)->bytes;
  s.value = find(v, 2)->as_float();
  return s;
}

}  // namespace gradlab::testing_train
