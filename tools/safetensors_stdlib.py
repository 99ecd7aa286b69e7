#!/usr/bin/env python3
"""A safetensors reader and writer using only Python's standard library (json, struct).

It is the independent party in gradlab's interoperability checks: it reads files gradlab writes
and writes files gradlab must read, without sharing any code with gradlab.

  safetensors_stdlib.py dump FILE      print the file as JSON (metadata, dtypes, shapes, values),
                                       and recompute gradlab's checksum when the file has one
  safetensors_stdlib.py write FILE     write the example file described by EXAMPLE below
  safetensors_stdlib.py corpus DIR     write crafted good and bad files (the fuzz seed corpus)

Format: 8-byte little-endian header length N, N bytes of JSON
{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
 "__metadata__": {"key": "value"}}, then the data; offsets are relative to the data.
"""

import json
import os
import struct
import sys

FORMATS = {"F64": "d", "F32": "f", "F16": "e", "I64": "q", "I32": "i", "I16": "h", "I8": "b",
           "U8": "B", "U16": "H", "U32": "I", "U64": "Q", "BOOL": "?"}
SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
         "U8": 1, "U16": 2, "U32": 4, "U64": 8, "BOOL": 1}
FNV_OFFSET, FNV_PRIME, MASK = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1
CHECKSUM_KEY = "gradlab.checksum"


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def decode(dtype, raw):
    """Values of a little-endian buffer as Python numbers."""
    if dtype == "BF16":  # the upper half of a float32
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0]
                for (h,) in struct.iter_unpack("<H", raw)]
    return [v for (v,) in struct.iter_unpack("<" + FORMATS[dtype], raw)]


def fnv1a64(data, h=FNV_OFFSET):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def table_digest(entries, metadata):
    """gradlab's checksum start: names, dtypes, shapes, offsets (header order), then metadata
    (sorted by key, without the checksum), each field ending in a NUL byte."""
    s = b"safetensors-table-v1\0"
    for name, info in entries:
        s += name.encode() + b"\0" + info["dtype"].encode() + b"\0"
        s += b"".join(str(d).encode() + b"," for d in info["shape"])
        begin, end = info["data_offsets"]
        s += b"\0" + str(begin).encode() + b"," + str(end).encode() + b"\0"
    for key in sorted(metadata):
        if key != CHECKSUM_KEY:
            s += key.encode() + b"\0" + metadata[key].encode() + b"\0"
    return fnv1a64(s)


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise ValueError("header length %d runs past the end of the file" % n)
    header = json.loads(blob[8:8 + n].decode("utf-8"), object_pairs_hook=list)
    data = blob[8 + n:]
    metadata, entries = {}, []
    for name, value in header:
        if name == "__metadata__":
            metadata = dict(value)
        else:
            entries.append((name, dict(value)))
    covered = 0
    for name, info in sorted(entries, key=lambda e: tuple(e[1]["data_offsets"])):
        begin, end = info["data_offsets"]
        if begin != covered or end - begin != numel(info["shape"]) * SIZES[info["dtype"]]:
            raise ValueError("bad data_offsets for %r" % name)
        covered = end
    if covered != len(data):
        raise ValueError("the tensors do not cover the data section exactly")
    return entries, metadata, data


def dump(path):
    entries, metadata, data = read(path)
    out = {"metadata": metadata, "order": [name for name, _ in entries], "tensors": {}}
    for name, info in entries:
        begin, end = info["data_offsets"]
        out["tensors"][name] = {"dtype": info["dtype"], "shape": info["shape"],
                                "values": decode(info["dtype"], data[begin:end])}
    if CHECKSUM_KEY in metadata:
        h = table_digest(entries, metadata)
        for name, info in sorted(entries, key=lambda e: tuple(e[1]["data_offsets"])):
            begin, end = info["data_offsets"]
            h = fnv1a64(data[begin:end], h)
        out["checksum_ok"] = metadata[CHECKSUM_KEY] == "fnv1a64:%016x" % h
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


# What `write` stores: name -> (dtype, shape, values). gradlab's interop check knows these.
EXAMPLE = [
    ("weight", "F32", [2, 3], [0.5, -1.25, 3.0, 1e-3, -0.0, 65504.0]),
    ("bias", "F64", [3], [1.0 / 3.0, -2.5, 1e-300]),
    ("count", "I64", [], [-42]),
    ("flags", "BOOL", [4], [True, False, False, True]),
    ("half", "F16", [2], [1.5, -2.0]),
    ("labels", "I32", [3], [7, -1, 2147483647]),
    ("pixels", "U8", [2, 2], [0, 255, 128, 1]),
    ("empty", "F32", [0, 3], []),
]


def encode(dtype, values):
    return struct.pack("<%d%s" % (len(values), FORMATS[dtype]), *values)


def write(path, tensors=EXAMPLE, metadata=None):
    """Writes like the safetensors library: data sorted by alignment (largest first), then name;
    header padded with spaces to a multiple of 8."""
    order = sorted(tensors, key=lambda t: (-SIZES[t[1]], t[0]))
    header, blobs, at = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, values in order:
        raw = encode(dtype, values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def raw_file(header_text, data=b"", length=None):
    text = header_text.encode("utf-8") if isinstance(header_text, str) else header_text
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def corpus(directory):
    """Good files (the fuzzer mutates them) and bad ones, each a case the loader must refuse."""
    os.makedirs(directory, exist_ok=True)
    write(os.path.join(directory, "good_example.safetensors"),
          metadata={"format": "pt", "source": "safetensors_stdlib.py"})
    write(os.path.join(directory, "good_empty.safetensors"), tensors=[])
    f32 = struct.pack("<2f", 1.0, 2.0)
    entry = '"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'
    bad = {
        "bad_empty_file": b"",
        "bad_short_length": b"\x10\x00\x00",
        "bad_huge_header_length": raw_file("{}", length=(1 << 63)),
        "bad_header_past_end": raw_file("{}", length=4096),
        "bad_not_json": raw_file("{this is not json}"),
        "bad_json_array": raw_file("[1,2,3] "),
        "bad_nul_in_header": raw_file(b"{}\x00junk  "),
        "bad_truncated_json": raw_file('{"t":{"dtype":"F32",'),
        "bad_duplicate_key": raw_file("{%s,%s}" % (entry, entry), f32),
        "bad_unknown_dtype": raw_file('{"t":{"dtype":"X9","shape":[2],"data_offsets":[0,8]}}', f32),
        "bad_negative_dim": raw_file('{"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}', f32),
        "bad_float_dim": raw_file('{"t":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}}', f32),
        "bad_shape_size_mismatch": raw_file('{"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', f32),
        "bad_shape_overflow": raw_file('{"t":{"dtype":"F64","shape":[4294967296,4294967296,4],'
                                       '"data_offsets":[0,8]}}', f32),
        "bad_offsets_reversed": raw_file('{"t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}', f32),
        "bad_offsets_past_end": raw_file('{"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', f32),
        "bad_overlap": raw_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                                '"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', f32),
        "bad_hole": raw_file('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', f32),
        "bad_trailing_data": raw_file("{%s}" % entry, f32 + b"\x00" * 8),
        "bad_bool_byte": raw_file('{"b":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}', b"\x01\x05"),
        "bad_metadata_not_string": raw_file('{"__metadata__":{"k":1}}'),
        "bad_missing_field": raw_file('{"t":{"dtype":"F32","shape":[2]}}', f32),
        "bad_checksum_mismatch": raw_file('{"__metadata__":{"gradlab.checksum":"fnv1a64:0000000000000000"},%s}'
                                          % entry, f32),
        "bad_checksum_malformed": raw_file('{"__metadata__":{"gradlab.checksum":"crc32:1234"},%s}' % entry, f32),
        "bad_foreign_png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01",
        "bad_foreign_npy": b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
        "bad_deep_nesting": raw_file("{\"a\":" + "[" * 5000 + "]" * 5000 + "}"),
    }
    for name, blob in bad.items():
        with open(os.path.join(directory, name + ".safetensors"), "wb") as f:
            f.write(blob)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("dump", "write", "corpus"):
        sys.stderr.write(__doc__)
        return 2
    {"dump": dump, "write": write, "corpus": corpus}[argv[1]](argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
