#pragma once
// A minimal protobuf *encoder* for the handful of TensorBoard messages SummaryWriter writes
// (Event, Summary, Summary.Value, HistogramProto, SummaryMetadata, TensorProto and the hparams
// plugin's messages). Internal to train/; not part of the public API.
//
// Why hand-written and not libprotobuf + a .proto subset: the library then gains no link
// dependency (the GPU machine has no Debian -dev packages, and libprotobuf's ABI ties gradlab to
// one protobuf version), and the encoding needed is tiny: four wire types. Correctness is not
// taken on trust: checks/train/tensorboard_reader.py parses every byte with TensorBoard's own
// generated protobuf classes and EventAccumulator.
//
// Wire format (https://protobuf.dev/programming-guides/encoding/):
//   key   = varint(field_number << 3 | wire_type)
//   0 VARINT  int32/int64/uint64/bool/enum: 7 bits per byte, low groups first, high bit = "more"
//             (a negative int32/int64 is sign-extended to 64 bits: 10 bytes)
//   1 I64     double: 8 bytes little-endian
//   2 LEN     string/bytes/sub-message/packed repeated: varint length, then the bytes
//   5 I32     float: 4 bytes little-endian
// Field numbers are TensorBoard's (tensorboard/compat/proto/{event,summary,histogram,tensor,
// tensor_shape}.proto, tensorboard/plugins/hparams/{api,plugin_data}.proto,
// google/protobuf/struct.proto); each use names its message and field.

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradlab::train::detail {

class ProtoEncoder {
 public:
  ProtoEncoder& varint(int field, uint64_t v) {
    key(field, 0);
    raw_varint(v);
    return *this;
  }
  ProtoEncoder& int64(int field, int64_t v) { return varint(field, static_cast<uint64_t>(v)); }
  ProtoEncoder& boolean(int field, bool v) { return varint(field, v ? 1 : 0); }
  ProtoEncoder& fixed64_double(int field, double v) {
    key(field, 1);
    raw_le(std::bit_cast<uint64_t>(v), 8);
    return *this;
  }
  ProtoEncoder& fixed32_float(int field, float v) {
    key(field, 5);
    raw_le(std::bit_cast<uint32_t>(v), 4);
    return *this;
  }
  ProtoEncoder& bytes(int field, std::string_view s) {
    key(field, 2);
    raw_varint(s.size());
    buf_.append(s);
    return *this;
  }
  ProtoEncoder& message(int field, const ProtoEncoder& m) { return bytes(field, m.str()); }
  /// A packed repeated double (one LEN field holding 8 bytes per value).
  ProtoEncoder& packed_doubles(int field, const std::vector<double>& vs) {
    ProtoEncoder inner;
    for (double v : vs) inner.raw_le(std::bit_cast<uint64_t>(v), 8);
    return bytes(field, inner.str());
  }
  const std::string& str() const { return buf_; }

 private:
  void key(int field, int wire_type) {
    raw_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
  }
  void raw_varint(uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<char>(v));
  }
  void raw_le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  std::string buf_;
};

}  // namespace gradlab::train::detail
