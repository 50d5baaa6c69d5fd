"""Minimal GGUF v3 writer (and reader) in numpy: metadata key/values, F32 / F16 / Q8_0 tensors.
Format: magic "GGUF", version 3, tensor count, kv count, kvs, tensor infos (name, n_dims,
ne0..ne{n-1} with ne0 the contiguous dimension, ggml type, offset), padding to the alignment,
tensor data (each tensor aligned). Q8_0 follows ggml's reference quantizer bit for bit."""
import struct
import numpy as np

ALIGN = 32
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, \
    T_UINT64, T_INT64, T_FLOAT64 = range(13)
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
_SCALAR = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I",
           T_INT32: "<i", T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q",
           T_FLOAT64: "<d"}


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def quantize_q8_0(x):
    """x: float32 array whose last dim is a multiple of 32. Returns the raw Q8_0 bytes."""
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    d = (amax / np.float32(127.0)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    v = x * idv[:, None]
    q = (np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))).astype(np.int8)  # roundf
    out = np.empty(len(x), dtype=[("d", "<f2"), ("q", "i1", 32)])
    out["d"] = d.astype(np.float16)
    out["q"] = q
    return out.tobytes()


def dequantize_q8_0(raw, n):
    blk = np.frombuffer(raw, dtype=[("d", "<f2"), ("q", "i1", 32)], count=n // 32)
    return (blk["d"].astype(np.float32)[:, None] * blk["q"].astype(np.float32)).reshape(-1)


class GGUFWriter:
    def __init__(self):
        self.kv = []       # (key, type, value[, elem type])
        self.tensors = []  # (name, ne list, ggml type, bytes)

    def add(self, key, vtype, value, etype=None):
        self.kv.append((key, vtype, value, etype))

    def add_tensor(self, name, arr, gtype):
        """arr: numpy array in C order, shape (ne_{n-1}, ..., ne0), i.e. torch's shape."""
        ne = list(arr.shape[::-1])
        if gtype == GGML_F32:
            data = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        elif gtype == GGML_F16:
            data = np.ascontiguousarray(arr, dtype="<f2").tobytes()
        elif gtype == GGML_Q8_0:
            assert ne[0] % 32 == 0, name
            data = quantize_q8_0(arr)
        else:
            raise ValueError(gtype)
        self.tensors.append((name, ne, gtype, data))

    def _value(self, vtype, v, etype):
        if vtype == T_STRING:
            return _str(v)
        if vtype == T_ARRAY:
            body = struct.pack("<IQ", etype, len(v))
            if etype == T_STRING:
                return body + b"".join(_str(s) for s in v)
            return body + np.asarray(v, dtype=np.dtype(_SCALAR[etype][1:]).newbyteorder("<")).tobytes()
        return struct.pack(_SCALAR[vtype], v)

    def write(self, path):
        head = [b"GGUF", struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))]
        for k, t, v, e in self.kv:
            head += [_str(k), struct.pack("<I", t), self._value(t, v, e)]
        off = 0
        for name, ne, gt, data in self.tensors:
            head += [_str(name), struct.pack("<I", len(ne)), struct.pack("<%dQ" % len(ne), *ne),
                     struct.pack("<IQ", gt, off)]
            off += (len(data) + ALIGN - 1) // ALIGN * ALIGN
        head = b"".join(head)
        with open(path, "wb") as fh:
            fh.write(head)
            fh.write(b"\0" * ((-len(head)) % ALIGN))
            for _, _, _, data in self.tensors:
                fh.write(data)
                fh.write(b"\0" * ((-len(data)) % ALIGN))


def read_gguf(path):
    """Returns (kv dict, tensors dict name -> float32 numpy array shaped (ne1, ne0) / (ne0,),
    tensor types dict)."""
    buf = open(path, "rb").read()
    pos = 0

    def rd(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, buf, pos); pos += struct.calcsize(fmt)
        return v if len(v) > 1 else v[0]

    def rstr():
        nonlocal pos
        n = rd("<Q"); s = buf[pos:pos + n].decode("utf-8"); pos += n
        return s

    def rval(t):
        if t == T_STRING:
            return rstr()
        if t == T_ARRAY:
            et, n = rd("<I"), rd("<Q")
            return [rval(et) for _ in range(n)]
        return rd(_SCALAR[t])

    assert buf[:4] == b"GGUF"; pos = 4
    ver, nt, nkv = rd("<I"), rd("<Q"), rd("<Q")
    assert ver == 3
    kv = {}
    for _ in range(nkv):
        k = rstr(); kv[k] = rval(rd("<I"))
    infos = []
    for _ in range(nt):
        name = rstr(); nd = rd("<I")
        ne = [rd("<Q") for _ in range(nd)]
        infos.append((name, ne, rd("<I"), rd("<Q")))
    align = kv.get("general.alignment", ALIGN)
    base = (pos + align - 1) // align * align
    tensors, types = {}, {}
    for name, ne, gt, off in infos:
        n = int(np.prod(ne))
        if gt == GGML_F32:
            a = np.frombuffer(buf, "<f4", n, base + off)
        elif gt == GGML_F16:
            a = np.frombuffer(buf, "<f2", n, base + off).astype(np.float32)
        elif gt == GGML_Q8_0:
            a = dequantize_q8_0(buf[base + off: base + off + n // 32 * 34], n)
        else:
            raise ValueError(gt)
        tensors[name] = a.reshape(ne[::-1]).astype(np.float32)
        types[name] = gt
    return kv, tensors, types
