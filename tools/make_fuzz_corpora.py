#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets fuzz_npy, fuzz_csv and fuzz_checkpoint (standard
library only), also replayed by checks/io/corpus_test.cpp: good_* files must load, bad_* files
must be refused with an error naming the file (and the byte offset or the line).

  make_fuzz_corpora.py DIR     writes DIR/corpus_npy, DIR/corpus_csv, DIR/corpus_checkpoint
                               (DIR = checks/io)
"""

import gzip
import io
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_stdlib as st  # noqa: E402


def npy(descr, shape, data, fortran=False, version=1, header=None):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    h = header if header is not None else (
        "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_text))
    pre = 10 if version == 1 else 12
    h += " " * ((64 - (pre + len(h) + 1) % 64) % 64) + "\n"
    raw = h.encode("latin-1")
    length = struct.pack("<H", len(raw)) if version == 1 else struct.pack("<I", len(raw))
    return b"\x93NUMPY" + bytes([version, 0]) + length + raw + data


def npy_corpus():
    good = npy("<f4", [2, 3], struct.pack("<6f", *range(6)))
    return {
        "good_f4_2x3.npy": good,
        "good_f8_scalar.npy": npy("<f8", [], struct.pack("<d", 2.5)),
        "good_i2_big_endian.npy": npy(">i2", [3], struct.pack(">3h", -1, 2, 300)),
        "good_u1_fortran.npy": npy("|u1", [2, 2], bytes([1, 2, 3, 4]), fortran=True),
        "good_bool.npy": npy("|b1", [4], bytes([0, 1, 1, 0])),
        "good_f2_v2.npy": npy("<f2", [2], struct.pack("<2e", 1.0, -2.0), version=2),
        "good_empty.npy": npy("<f4", [0, 5], b""),
        "good_i8.npy": npy("<i8", [2], struct.pack("<2q", -5, 1 << 40)),
        "bad_truncated.npy": good[:-3],
        "bad_trailing.npy": good + b"xx",
        "bad_magic.npy": b"\x93NUMPZ" + good[6:],
        "bad_version.npy": good[:6] + bytes([9]) + good[7:],
        "bad_header_length.npy": good[:8] + struct.pack("<H", 60000) + good[10:],
        "bad_bool_byte.npy": npy("|b1", [2], bytes([0, 7])),
        "bad_descr.npy": npy("<c8", [1], b"\0" * 8),
        "bad_no_shape.npy": npy("", [], b"", header="{'descr': '<f4', 'fortran_order': False, }"),
        "bad_shape_text.npy": npy("", [], b"", header="{'descr': '<f4', 'fortran_order': False, "
                                                       "'shape': (2, x), }"),
        "bad_shape_overflow.npy": npy("<f8", [1 << 40, 1 << 40], b""),
        "bad_zero_extent_overflow.npy": npy("<f4", [0, 10 ** 17, 10 ** 17], b""),
        "bad_fortran_value.npy": npy("", [], b"", header="{'descr': '<f4', 'fortran_order': "
                                                          "Maybe, 'shape': (), }"),
        "bad_empty_file.npy": b"",
    }


def gz(text, mtime=0):
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=mtime) as f:
        f.write(text.encode())
    return out.getvalue()


def csv_corpus():
    plain = "1,2,3\n4,5,6\n\n7.5, -8e-3 ,9\r\n"
    member = gz("x,y,label\n0.1,0.2,1\n0.3,0.4,0\n")
    return {
        "good_plain.csv": plain.encode(),
        "good_header.csv": b"x,y,label\n0.1,0.2,1\n0.3,0.4,0\n",
        "good_semicolon.csv": b"1;2\n3;4\n",
        "good_empty.csv": b"",
        "good_header_compressed.csv.gz": member,
        "good_two_members.csv.gz": gz("1,2\n") + gz("3,4\n"),
        "bad_not_a_number.csv": b"1,2\n3,abc\n",
        "bad_field_count.csv": b"1,2,3\n4,5\n",
        "bad_empty_field.csv": b"1,,3\n",
        "bad_truncated.csv.gz": member[: len(member) // 2],
        "bad_corrupt.csv.gz": member[:12] + bytes(b ^ 0x5a for b in member[12:20]) + member[20:],
        "bad_trailing_bytes.csv.gz": member + b"garbage",
        "bad_huge_number.csv": b"1e999,2\n",
    }


def checkpoint_file(tensors, metadata, checksum=True):
    """A checkpoint as gradlab writes it: the header lists the tensors in the order given and
    the data follows in that order; the checksum covers the table and the data."""
    header, blobs, at = {"__metadata__": dict(metadata)}, [], 0
    entries = []
    for name, dtype, shape, values in tensors:
        raw = st.encode(dtype, values)
        info = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        header[name] = info
        entries.append((name, info))
        blobs.append(raw)
        at += len(raw)
    if checksum:
        h = st.table_digest(entries, header["__metadata__"])
        for b in blobs:
            h = st.fnv1a64(b, h)
        header["__metadata__"][st.CHECKSUM_KEY] = "fnv1a64:%016x" % h
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def checkpoint_corpus():
    tensors = [("model/fc.weight", "F32", [2, 2], [1.0, 2.0, 3.0, 4.0]),
               ("model/fc.bias", "F32", [2], [0.5, -0.5]),
               ("optimizer/state.0.step", "I64", [1], [7])]
    meta = {"gradlab.format": "checkpoint-v1", "gradlab.epoch": "3", "gradlab.step": "120",
            "gradlab.rng.default": "12345 678", "gradlab.loader.seed": "42",
            "gradlab.loader.epoch": "3", "gradlab.loader.position": "5",
            "gradlab.model.meta.version": "1", "user.note": "seed corpus"}
    good = checkpoint_file(tensors, meta)

    def without(key):
        return {k: v for k, v in meta.items() if k != key}

    return {
        "good_checkpoint.safetensors": good,
        "good_minimal.safetensors": checkpoint_file(
            [], {"gradlab.format": "checkpoint-v1", "gradlab.epoch": "0", "gradlab.step": "0"}),
        "bad_not_a_checkpoint.safetensors": checkpoint_file(tensors, without("gradlab.format")),
        "bad_no_step.safetensors": checkpoint_file(tensors, without("gradlab.step")),
        "bad_epoch_not_integer.safetensors": checkpoint_file(
            tensors, dict(meta, **{"gradlab.epoch": "3.5"})),
        "bad_loader_incomplete.safetensors": checkpoint_file(
            tensors, without("gradlab.loader.position")),
        "bad_tensor_without_part.safetensors": checkpoint_file(
            tensors + [("stray", "F32", [1], [0.0])], meta),
        "bad_no_checksum.safetensors": checkpoint_file(tensors, meta, checksum=False),
        "bad_checksum_mismatch.safetensors": good[:-1] + bytes([good[-1] ^ 1]),
        "bad_truncated.safetensors": good[:-4],
    }


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    for sub, files in (("corpus_npy", npy_corpus()), ("corpus_csv", csv_corpus()),
                       ("corpus_checkpoint", checkpoint_corpus())):
        d = os.path.join(argv[1], sub)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
