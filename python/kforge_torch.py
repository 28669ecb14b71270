#!/usr/bin/env python3
"""kforge's PyTorch bridge: the Python side, driven by the C++ side as a subprocess.

    python3 kforge_torch.py COMMAND REQUEST.json ANSWER.json
    python3 kforge_torch.py serve      (requests as JSON lines on stdin, answers on fd 3)

Commands (the request and answer are JSON; tensors cross in safetensors files):
  probe     torch's version and whether CUDA is usable (no request needed)
  describe  load a KernelBench file (Model, get_inputs, get_init_inputs) and say what its
            inputs, parameters, buffers and outputs are, and its FLOPs
  run       the module on each trial's inputs at the problem's dtype (the reference) and
            in float64 (the oracle)
  map, run_shared, stage, unmap   (serve only) the GPU-resident path: GPU memory an
            evaluation's judge shares by file descriptor (CUDA VMM; the fd arrives on
            descriptor 4) is mapped once; run_shared runs the module on the inputs there and
            writes its outputs there; stage copies the inputs there as a timing rotation, for
            a "time" with "staged" instead of a file; unmap lets it go. No tensor crosses the host.
  time      eager, torch.compile and (for the parity check) a kforge kernel library, timed
            with kforge's protocol (src/eval/timer.cpp): CUDA events on the current stream,
            a device-wide sync on both sides of the call, the L2 scrubbed before every
            sample, three input sets rotated, warm-up discarded, subjects interleaved in
            alternating order, sampling until every median's 95% CI is under the target

The answer file gets {"error": "..."} and the exit code is 1 when the command fails; what
the model prints goes to stdout/stderr, never into the answer. Only torch and the standard
library are used: the safetensors format is read and written here (8-byte header length,
JSON header, raw little-endian data), so the `safetensors` package is not needed.
"""
import ctypes
import importlib.util
import inspect
import json
import math
import os
import socket
import struct
import sys
import time
import traceback

import torch

# ---------------------------------------------------------------------------------------
# safetensors

_ST_DTYPES = {
    "F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32, "F64": torch.float64,
    "I8": torch.int8, "I32": torch.int32, "I64": torch.int64, "U8": torch.uint8, "BOOL": torch.bool,
}
_ST_NAMES = {v: k for k, v in _ST_DTYPES.items()}
# kforge's dtype names (problem.toml, src/core/dtype.cpp) and the kf_dtype enum values.
KF_NAMES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
            "i8": torch.int8, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8, "bool": torch.bool}
KF_ENUM = {torch.float16: 1, torch.bfloat16: 2, torch.float32: 3, torch.float64: 4, torch.int8: 5,
           torch.int32: 6, torch.int64: 7, torch.uint8: 8, torch.bool: 9}


def kf_name(dtype):
    for k, v in KF_NAMES.items():
        if v == dtype:
            return k
    raise ValueError(f"dtype {dtype} has no kforge equivalent (kforge has {', '.join(KF_NAMES)})")


def read_safetensors(path):
    # Each tensor is read straight into its own buffer: a softmax trial's float64 truth is
    # 2 GiB, and reading the whole file first would hold it twice.
    out = {}
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        for name, info in header.items():
            if name == "__metadata__":
                continue
            b, e = info["data_offsets"]
            dt = _ST_DTYPES[info["dtype"]]
            raw = bytearray(e - b)
            f.seek(8 + n + b)
            if f.readinto(raw) != e - b:
                raise RuntimeError(f"{path}: tensor '{name}' is cut short")
            t = torch.frombuffer(raw, dtype=dt) if raw else torch.empty(0, dtype=dt)
            out[name] = t.reshape(info["shape"])
    return out


def host_bytes(t):
    """A zero-copy view of a contiguous CPU tensor's bytes (t must outlive it). Not
    ctypes.string_at: its size is a C int, so tensors of 2 GiB and more failed."""
    n = t.numel() * t.element_size()
    return memoryview((ctypes.c_char * n).from_address(t.data_ptr())) if n else memoryview(b"")


def write_safetensors(path, tensors):
    header, held, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        n = t.numel() * t.element_size()
        header[name] = {"dtype": _ST_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        held.append(t)
        offset += n
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for t in held:
            f.write(host_bytes(t))


# ---------------------------------------------------------------------------------------
# the module

def load_module(path):
    path = os.path.abspath(path)
    if os.path.dirname(path) not in sys.path:
        sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("kforge_reference_module", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{path}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, name):
            raise RuntimeError(f"{path}: a KernelBench file defines Model, get_inputs and get_init_inputs; "
                               f"'{name}' is missing")
    return mod


def honest_fp32():
    """The reference is fp32 when the problem says fp32: no TF32 in matmul or cuDNN."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def forward_names(model, n):
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params]
    except (TypeError, ValueError):
        names = []
    if len(names) != n or len(set(names)) != n:
        names = [f"in{i}" for i in range(n)]
    return names


def stats(t):
    """What a draw looks like (min, max, mean, std, constant), without a float64 copy of it:
    min and max over every element, the moments over at most 2^22 of them, evenly strided."""
    if t.numel() == 0:
        return {}
    t = t.detach()
    if t.dtype == torch.bool:
        return {"min": float(t.all()), "max": float(t.any())}
    lo, hi = float(t.min()), float(t.max())
    flat = t.reshape(-1)
    sample = flat[::max(1, flat.numel() // (1 << 22))].double()
    return {"min": lo, "max": hi, "mean": float(sample.mean()),
            "std": float(sample.std()) if sample.numel() > 1 else 0.0, "all_equal": lo == hi}


def as_outputs(y):
    if isinstance(y, torch.Tensor):
        return [y]
    if isinstance(y, (tuple, list)) and all(isinstance(v, torch.Tensor) for v in y):
        return list(y)
    raise RuntimeError(f"forward() returned {type(y).__name__}; kforge needs a tensor or a tuple of tensors")


def flop_count(model, inputs):
    try:
        from torch.utils.flop_counter import FlopCounterMode
        with FlopCounterMode(display=False) as fc, torch.no_grad():
            model(*inputs)
        return int(fc.get_total_flops())
    except Exception:  # noqa: BLE001 -- FLOPs are optional: 0 means "count bytes only"
        return None


# aten ops that move no data and compute nothing: not counted as work.
_VIEW_OPS = {"view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "detach", "alias",
             "slice", "select", "as_strided", "unsqueeze", "squeeze", "flatten", "unflatten", "split",
             "chunk", "narrow", "contiguous", "clone", "copy_", "_to_copy", "empty", "empty_like",
             "zeros_like", "ones_like", "lift_fresh", "lift_fresh_copy", "unbind", "view_as"}


def elementwise_count(model, inputs):
    """Work where FlopCounterMode sees none (pointwise ops, reductions, softmax, losses): each
    aten op counts one operation per element of its largest operand. An estimate (GELU's tanh is
    several), but not zero: the roofline needs a work count."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode

        class Count(TorchDispatchMode):
            total = 0

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                name = func.__name__.split(".")[0]
                if name not in _VIEW_OPS:
                    sizes = [x.numel() for x in list(args) + list((kwargs or {}).values()) + as_list(out)
                             if isinstance(x, torch.Tensor)]
                    Count.total += max(sizes, default=0)
                return out

        with Count(), torch.no_grad():
            model(*inputs)
        return int(Count.total)
    except Exception:  # noqa: BLE001
        return None


def as_list(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def cmd_probe(req):
    # "light": warming a helper up: no CUDA context (another evaluation may be timing).
    ok = torch.cuda.is_available()
    return {"torch_version": torch.__version__, "cuda": ok,
            "device_name": torch.cuda.get_device_name(0) if ok and not req.get("light") else "",
            "python": sys.version.split()[0], "interpreter": interpreter_info()}


def interpreter_info():
    """What kforge's worker needs to embed this interpreter for a Python candidate
    (src/worker/python_library.cpp): its shared libpython, home and sys.path."""
    import sysconfig
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    names = [sysconfig.get_config_var(k) for k in ("INSTSONAME", "LDLIBRARY")]
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    found = ""
    for name in names:
        if not name or ".so" not in name:  # a static libpython (.a) cannot be loaded
            continue
        for d in (libdir, os.path.join(libdir, multiarch), "/usr/lib/" + multiarch, "/usr/lib", "/usr/local/lib"):
            if d and os.path.isfile(os.path.join(d, name)):
                found = os.path.realpath(os.path.join(d, name))
                break
        if found:
            break
    here = os.path.dirname(os.path.abspath(__file__))
    return {"libpython": found, "version": sys.version.split()[0], "home": sys.base_prefix, "prefix": sys.prefix,
            "path": list(dict.fromkeys([os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)
                                        and os.path.abspath(p) != here] + [here])),
            "why_no_libpython": "" if found else
            (f"the Python at {sys.base_prefix} has no shared libpython (Py_ENABLE_SHARED="
             f"{sysconfig.get_config_var('Py_ENABLE_SHARED')}): kforge runs a Python candidate inside its worker and "
             f"needs lib{'python' + sysconfig.get_config_var('VERSION')}.so (Debian: the libpython3.x package; or "
             f"a Python built with --enable-shared, e.g. uv's or pyenv's with PYTHON_CONFIGURE_OPTS=--enable-shared)")}


def _mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _nbytes(ts):
    return sum(x.numel() * x.element_size() for x in ts if isinstance(x, torch.Tensor))


def draw_inputs(mod, seed):
    """get_inputs() without drawing more than this machine holds. Shapes and dtypes come from a
    call on the meta device (no memory); the values, whose statistics become the problem's
    distributions, from one real draw where it fits: on the GPU when there is one, else on the
    host when it takes under a third of the memory available. @return (inputs, meta inputs or
    None, where drawn: "cuda" | "cpu" | None, why not drawn)"""
    meta = None
    try:
        torch.manual_seed(seed)
        with torch.device("meta"):
            meta = list(mod.get_inputs())
    except Exception:  # noqa: BLE001 -- a get_inputs() that meta cannot run is drawn as before
        meta = None
    need = _nbytes(meta) if meta is not None else None
    where = "cuda" if torch.cuda.is_available() else "cpu"
    avail = torch.cuda.mem_get_info()[0] if where == "cuda" else _mem_available()
    if need is not None and avail is not None and need * (2 if where == "cuda" else 3) > avail:
        return meta, meta, None, (f"get_inputs() draws {need / 2**30:.1f} GiB; {avail / 2**30:.1f} GiB is free "
                                  f"{'on the GPU' if where == 'cuda' else 'here, and there is no GPU'}")
    torch.manual_seed(seed)
    with torch.device(where):
        inputs = list(mod.get_inputs())
    return inputs, meta, where, ""


def cmd_describe(req):
    mod = load_module(req["model"])
    torch.manual_seed(req.get("seed", 0))
    init = list(mod.get_init_inputs())
    try:
        json.dumps(init)
    except TypeError as e:
        raise RuntimeError(f"get_init_inputs() returned something JSON cannot hold ({e}); "
                           "kforge stores Model's arguments in problem.toml") from e
    model = mod.Model(*init)
    inputs, meta, drawn_on, not_drawn = draw_inputs(mod, req.get("seed", 0))
    for i, x in enumerate(inputs):
        if not isinstance(x, (torch.Tensor, bool, int, float)):
            raise RuntimeError(f"get_inputs()[{i}] is a {type(x).__name__}, neither a tensor nor a number; "
                               "kforge passes tensors (make it a constant inside Model)")
    names = forward_names(model, len(inputs))
    desc_inputs = []
    for n, x in zip(names, inputs):
        if isinstance(x, torch.Tensor):
            desc_inputs.append({"name": n, "dtype": kf_name(x.dtype), "shape": list(x.shape),
                                "stats": stats(x) if drawn_on else {}})
        else:  # a number: a one-element tensor for kforge, the number again for the module
            v = float(x)
            desc_inputs.append({"name": n, "dtype": "f32" if isinstance(x, float) else "i64", "shape": [1],
                                "scalar": True, "stats": {"min": v, "max": v, "mean": v, "std": 0.0, "all_equal": True}})
    state = []
    for kind, items in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
        for name, t in items:
            state.append({"torch_name": name, "kind": kind, "dtype": kf_name(t.dtype), "shape": list(t.shape),
                          "stats": stats(t)})
    honest_fp32()
    # Shapes and FLOPs on the meta device when every op supports it (no compute at all);
    # else one real call where the inputs were drawn.
    outs, flops, where = None, None, "meta"

    def work(m, xs):
        fc = flop_count(m, xs)
        return (fc, "flop_counter") if fc else (elementwise_count(m, xs), "elements")
    try:
        mm = mod.Model(*init).to("meta")
        mi = meta if meta is not None else [x.to("meta") if isinstance(x, torch.Tensor) else x for x in inputs]
        with torch.no_grad():
            outs = as_outputs(mm(*mi))
        flops, flops_from = work(mm, mi)
    except Exception as e:  # noqa: BLE001
        if drawn_on is None:
            raise RuntimeError(f"the module does not run on the meta device ({type(e).__name__}: {e}), and its "
                               f"inputs were not drawn ({not_drawn}): import it on a machine with a GPU") from e
        where = drawn_on
        m = model.to(drawn_on)
        with torch.no_grad():
            outs = as_outputs(m(*inputs))
        flops, flops_from = work(m, inputs)
    # Submodules whose result depends on training mode (KernelBench runs Model() as built,
    # in training mode): BatchNorm uses batch statistics; Dropout with p > 0 draws (p = 0
    # is the identity in either mode, so it is not noted).
    mode = sorted({type(m).__name__ for m in model.modules()
                   if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)})
    random = sorted({type(m).__name__ for m in model.modules()
                     if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0})
    return {"torch_version": torch.__version__, "init_inputs": init, "training": model.training,
            "training_dependent": mode, "random": random,
            "inputs": desc_inputs, "state": state,
            "outputs": [{"dtype": kf_name(y.dtype), "shape": list(y.shape)} for y in outs],
            "flops": flops, "flops_from": flops_from,
            "shapes_from": where, "inputs_drawn_on": drawn_on or "", "inputs_not_drawn": not_drawn}


class Bridge:
    """The module built from a request, its state filled from kforge's param tensors."""

    def __init__(self, req):
        self.req = req
        self._mod = None
        init = req.get("init_inputs", "[]")
        self.init = json.loads(init) if isinstance(init, str) else init
        self.inputs = req.get("inputs", [])    # forward()'s arguments, ABI order: kforge names
        self.params = req.get("params", [])    # [[kforge name, torch name]]
        self.outputs = req.get("outputs", [])  # [{"name", "dtype"}]
        self.scalars = set(req.get("scalars", []))  # inputs forward() takes as Python numbers
        self.dtype = KF_NAMES[req["dtype"]]

    @property
    def mod(self):
        # Loaded on first use: timing a kernel library alone (the parity check of a native
        # problem) needs no module.
        if self._mod is None:
            if not self.req.get("model"):
                raise RuntimeError("this problem has no PyTorch module ([torch] module in problem.toml)")
            self._mod = load_module(self.req["model"])
        return self._mod

    def model(self, device, dtype):
        torch.manual_seed(0)
        m = self.mod.Model(*self.init)
        return m.to(device=device, dtype=dtype) if dtype is not None else m.to(device)

    def load_state(self, m, tensors, prefix, device):
        state = dict(m.named_parameters())
        state.update(dict(m.named_buffers()))
        with torch.no_grad():
            for kname, tname in self.params:
                if tname not in state:
                    raise RuntimeError(f"the module has no parameter or buffer '{tname}' (param '{kname}')")
                dst = state[tname]
                src = tensors[prefix + kname].to(device)
                dst.copy_(src.reshape(dst.shape).to(dst.dtype))

    def args(self, tensors, prefix, device, widen):
        """forward()'s arguments on `device`, floating ones in float64 when `widen`; each its own
        copy, so a module that writes to its inputs changes nothing its next run sees."""
        out = []
        for n in self.inputs:
            src = tensors[prefix + n]
            if n in self.scalars:  # a one-element tensor in kforge, a number to the module
                out.append(src.reshape(-1)[0].item())
                continue
            x = src.to(device)
            if widen and x.is_floating_point():
                x = x.double()
            if x.numel() and x.data_ptr() == src.data_ptr():
                x = x.clone()
            out.append(x)
        return out

    def reference(self, device):
        """The module at the problem's dtype."""
        return self.model(device, None if self.dtype == torch.float32 else self.dtype)

    def reference_and_oracle(self, device):
        """The module at the problem's dtype (the reference) and in float64 (the oracle)."""
        return self.reference(device), self.model(device, torch.float64)

    def run(self, m, tensors, prefix, device, widen, trial):
        """One run of `m` on a trial's tensors, its parameters loaded from them: its outputs."""
        self.load_state(m, tensors, prefix, device)
        torch.manual_seed(trial)  # a module that draws (dropout) draws the same in both
        with torch.no_grad():
            ys = as_outputs(m(*self.args(tensors, prefix, device, widen)))
        if len(ys) != len(self.outputs):
            raise RuntimeError(f"forward() returned {len(ys)} tensors; the problem declares {len(self.outputs)}")
        return ys


def cmd_run(req):
    honest_fp32()
    b = Bridge(req)
    dev = req.get("device", "cuda" if torch.cuda.is_available() else "cpu")
    if dev.startswith("cuda"):
        torch.cuda.set_device(torch.device(dev))
    tensors = read_safetensors(req["inputs_file"])
    if req.get("reference_only"):  # no float64 model: its weights alone can be gigabytes
        runs = (("reference", b.reference(dev), False),)
    else:
        ref, orc = b.reference_and_oracle(dev)
        runs = (("reference", ref, False), ("oracle", orc, True))
    result = {}
    for trial in req["trials"]:
        prefix = f"{trial}/"
        for label, m, widen in runs:
            ys = b.run(m, tensors, prefix, dev, widen, trial)
            for spec, y in zip(b.outputs, ys):
                want = KF_NAMES[spec["dtype"]]
                if label == "oracle" and want.is_floating_point and spec.get("follows_real", True):
                    want = torch.float64
                result[f"{prefix}{label}/{spec['name']}"] = y.detach().to(want).cpu()
    if dev.startswith("cuda"):
        torch.cuda.synchronize(dev)
    write_safetensors(req["outputs_file"], result)
    return {"device": dev, "device_name": torch.cuda.get_device_name(dev) if dev.startswith("cuda") else "cpu",
            "torch_version": torch.__version__}


# ---------------------------------------------------------------------------------------
# the GPU-resident path: memory shared by the evaluation's judge (src/bridge/torch_device.hpp)

class _CuMemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _CuMemAccessDesc(ctypes.Structure):
    _fields_ = [("location", _CuMemLocation), ("flags", ctypes.c_int)]


_CU_POSIX_FD = 1             # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_CU_LOCATION_DEVICE = 1      # CU_MEM_LOCATION_TYPE_DEVICE
_CU_ACCESS_READWRITE = 3     # CU_MEM_ACCESS_FLAGS_PROT_READWRITE


class _ByteArray:
    """Device bytes as __cuda_array_interface__, for torch.as_tensor (no copy)."""

    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (ptr, False), "version": 3,
                                         "strides": None}


class SharedMemory:
    """An allocation another process exported as a POSIX fd, mapped read-write here."""

    def __init__(self, fd, size, ordinal):
        cu = ctypes.CDLL("libcuda.so.1")
        self.cu, self.size = cu, size
        self.handle, self.ptr = ctypes.c_ulonglong(0), ctypes.c_ulonglong(0)
        self._check(cu.cuMemImportFromShareableHandle(ctypes.byref(self.handle), ctypes.c_void_p(fd),
                                                      ctypes.c_int(_CU_POSIX_FD)), "cuMemImportFromShareableHandle")
        try:
            self._check(cu.cuMemAddressReserve(ctypes.byref(self.ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                                               ctypes.c_ulonglong(0), ctypes.c_ulonglong(0)), "cuMemAddressReserve")
            self._check(cu.cuMemMap(self.ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), self.handle,
                                    ctypes.c_ulonglong(0)), "cuMemMap")
            desc = _CuMemAccessDesc(_CuMemLocation(_CU_LOCATION_DEVICE, ordinal), _CU_ACCESS_READWRITE)
            self._check(cu.cuMemSetAccess(self.ptr, ctypes.c_size_t(size), ctypes.byref(desc), ctypes.c_size_t(1)),
                        "cuMemSetAccess")
        except Exception:
            self.close()
            raise
        self.bytes = torch.as_tensor(_ByteArray(self.ptr.value, size), device=f"cuda:{ordinal}")
        if self.bytes.data_ptr() != self.ptr.value:
            raise RuntimeError("torch copied the shared memory instead of viewing it")

    def _check(self, rc, what):
        if rc != 0:
            msg = ctypes.c_char_p()
            self.cu.cuGetErrorString(ctypes.c_int(rc), ctypes.byref(msg))
            raise RuntimeError(f"{what}: {msg.value.decode() if msg.value else rc}")

    def tensor(self, offset, dtype, shape):
        n = math.prod(shape) * torch.empty(0, dtype=dtype).element_size()
        if offset < 0 or offset + n > self.size:
            raise RuntimeError(f"a view of {n} bytes at {offset} is outside the shared {self.size} bytes")
        return self.bytes[offset:offset + n].view(dtype).view(shape)

    def close(self):
        self.bytes = None
        if self.ptr.value:
            self.cu.cuMemUnmap(self.ptr, ctypes.c_size_t(self.size))
            self.cu.cuMemAddressFree(self.ptr, ctypes.c_size_t(self.size))
            self.ptr = ctypes.c_ulonglong(0)
        if self.handle.value:
            self.cu.cuMemRelease(self.handle)
            self.handle = ctypes.c_ulonglong(0)


_FD_SOCKET = None  # descriptor 4 in serve mode: where the C++ side sends file descriptors
_SHARED = {}       # "memory": SharedMemory, "models": {dtype: module} (one evaluation's)


def cmd_map(req):
    global _FD_SOCKET
    if _FD_SOCKET is None:
        _FD_SOCKET = socket.socket(fileno=4)
    _, fds, _, _ = socket.recv_fds(_FD_SOCKET, 4096, 4)
    if len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise RuntimeError(f"expected one descriptor, got {len(fds)}")
    try:
        cmd_unmap({})
        dev = torch.device(req["device"])
        if dev.type != "cuda" or not torch.cuda.is_available():
            raise RuntimeError(f"this torch ({torch.__version__}) cannot use CUDA, so it cannot map GPU memory")
        torch.cuda.set_device(dev)
        torch.empty(1, device=dev)  # the primary context, current on this thread
        _SHARED["memory"] = SharedMemory(fds[0], int(req["bytes"]), dev.index or 0)
        _SHARED["models"] = {}
    finally:
        os.close(fds[0])
    return {"device_name": torch.cuda.get_device_name(dev), "torch_version": torch.__version__}


def cmd_unmap(req):
    mem = _SHARED.pop("memory", None)
    _SHARED.pop("models", None)
    _SHARED.pop("staged", None)
    if mem is not None:
        torch.cuda.synchronize()
        mem.close()
    return {}


def cmd_run_shared(req):
    """The module on the shared inputs, outputs written in place (cmd_run, without files)."""
    honest_fp32()
    mem = _SHARED.get("memory")
    if mem is None:
        raise RuntimeError("run_shared before map")
    b = Bridge(req)
    dev = req["device"]
    views = {v["key"]: mem.tensor(int(v["offset"]), KF_NAMES[v["dtype"]], v["shape"]) for v in req["views"]}
    inputs = {k[3:]: t for k, t in views.items() if k.startswith("in/")}
    models = _SHARED["models"]  # built once per mapping: the parameters are reloaded every run
    if "reference" not in models:
        models["reference"], models["oracle"] = b.reference_and_oracle(dev)
    trial = int(req.get("trial", 0))
    for label, widen in (("reference", False), ("oracle", True)):
        ys = b.run(models[label], inputs, "", dev, widen, trial)
        for spec, y in zip(b.outputs, ys):
            dst = views[f"{label}/{spec['name']}"]
            if y.numel() != dst.numel():
                raise RuntimeError(f"output '{spec['name']}' of the module has shape {list(y.shape)}; the problem "
                                   f"declares {list(dst.shape)}")
            dst.copy_(y.detach().reshape(dst.shape))
        del ys
    torch.cuda.synchronize(dev)
    return {"device_name": torch.cuda.get_device_name(dev)}


def cmd_stage(req):
    """The inputs in the shared memory now (a timing rotation the judge drew there), copied as
    rotation req["rotation"] of the next cmd_time with "staged": eager and compile are timed
    on kforge's values without a file."""
    mem = _SHARED.get("memory")
    if mem is None:
        raise RuntimeError("stage before map")
    r = int(req["rotation"])
    staged = _SHARED.setdefault("staged", {})
    for v in req["views"]:
        if v["key"].startswith("in/"):
            staged[f"{r}/{v['key'][3:]}"] = mem.tensor(int(v["offset"]), KF_NAMES[v["dtype"]], v["shape"]).clone()
    torch.cuda.synchronize()
    return {}


# ---------------------------------------------------------------------------------------
# timing, kforge's protocol

def median_ci_rel(s):
    """The relative half-width of the median's 95% CI; src/eval/statistics.cpp, line for line."""
    n = len(s)
    if n < 5:
        return math.inf
    s = sorted(s)
    half = 0.98 * math.sqrt(n)
    lo = int(max(0.0, math.floor(n / 2.0 - half)))
    hi = int(min(n - 1.0, math.ceil(n / 2.0 + half)))
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    if med <= 0:
        return math.inf
    return (s[hi] - s[lo]) / (2.0 * med)


class KfTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8)]


class KfArgs(ctypes.Structure):
    _fields_ = [("inputs", ctypes.POINTER(KfTensor)), ("num_inputs", ctypes.c_int32),
                ("outputs", ctypes.POINTER(KfTensor)), ("num_outputs", ctypes.c_int32),
                ("stream", ctypes.c_void_p), ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t)]


def kf_tensor(t):
    k = KfTensor()
    k.data = t.data_ptr()
    k.dtype = KF_ENUM[t.dtype]
    k.ndim = t.dim()
    for i, (d, s) in enumerate(zip(t.shape, t.stride())):
        k.shape[i] = d
        k.strides[i] = s
    return k


class LibrarySubject:
    """A kforge kernel library called through the ABI on torch tensors (the parity check)."""

    def __init__(self, path, abi_inputs, out_specs, device):
        self.lib = ctypes.CDLL(os.path.abspath(path))
        self.fwd = self.lib.kf_forward
        self.fwd.argtypes = [ctypes.POINTER(KfArgs)]
        self.fwd.restype = ctypes.c_int
        self.ws_fn = getattr(self.lib, "kf_workspace_bytes", None)
        if self.ws_fn is not None:
            self.ws_fn.argtypes = [ctypes.POINTER(KfArgs)]
            self.ws_fn.restype = ctypes.c_size_t
        self.abi_inputs, self.out_specs, self.device = abi_inputs, out_specs, device

    def prepare(self, tensors):
        """kf_args for one input set, outputs and workspace allocated once (as kforge does)."""
        ins = [tensors[n] for n in self.abi_inputs]
        outs = [torch.empty(o["shape"], dtype=KF_NAMES[o["dtype"]], device=self.device) for o in self.out_specs]
        ki = (KfTensor * len(ins))(*[kf_tensor(t) for t in ins])
        ko = (KfTensor * len(outs))(*[kf_tensor(t) for t in outs])
        stream = torch.cuda.current_stream().cuda_stream if self.device.startswith("cuda") else None
        a = KfArgs(ki, len(ins), ko, len(outs), stream, None, 0)
        ws = None
        if self.ws_fn is not None:
            nbytes = int(self.ws_fn(ctypes.byref(a)))
            if nbytes:
                ws = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
                a.workspace, a.workspace_bytes = ws.data_ptr(), nbytes
        keep = (ins, outs, ki, ko, ws)  # alive as long as the args are
        return a, outs, keep

    def call(self, prepared):
        a, _, _ = prepared
        rc = self.fwd(ctypes.byref(a))
        if rc != 0:
            raise RuntimeError(f"kf_forward returned {rc}")


def cmd_time(req):
    honest_fp32()
    b = Bridge(req)
    dev = req.get("device", "cuda" if torch.cuda.is_available() else "cpu")
    cuda = dev.startswith("cuda")
    if cuda:
        torch.cuda.set_device(torch.device(dev))
    if req.get("staged"):
        tensors = _SHARED.pop("staged", None)  # cmd_stage's copies; gone with this command
        if tensors is None:
            raise RuntimeError("time on staged inputs before any stage")
    else:
        tensors = read_safetensors(req["inputs_file"])
    rotations = int(req.get("rotations", 3))
    cfg = req.get("timing", {})
    budget = float(cfg.get("budget_s", 2.0))
    warmup = int(cfg.get("warmup", 2))
    min_samples = int(cfg.get("min_samples", 10))
    max_samples = int(cfg.get("max_samples", 1000))
    target = float(cfg.get("target_rel_ci", 0.01))
    # An L2 scrub as large as kforge's (twice the L2), rewritten before every sample.
    scrub = None
    if cuda:
        l2 = torch.cuda.get_device_properties(dev).L2_cache_size
        scrub = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device=dev)
    scrub_byte = [0]

    def flush():
        if scrub is not None:
            scrub_byte[0] = (scrub_byte[0] + 1) % 256
            scrub.fill_(scrub_byte[0])

    def sync():
        if cuda:
            torch.cuda.synchronize()

    subjects, errors = [], {}
    for sj in req["subjects"]:
        name = sj["name"]
        try:
            if sj["kind"] in ("eager", "compile"):
                m = b.model(dev, None if b.dtype == torch.float32 else b.dtype)
                b.load_state(m, tensors, "0/", dev)
                sets = [b.args(tensors, f"{r}/", dev, False) for r in range(rotations)]
                fn = m
                if sj["kind"] == "compile":
                    fn = torch.compile(m, mode=sj.get("mode") or None)

                def call(r, fn=fn, sets=sets):
                    with torch.no_grad():
                        fn(*sets[r])
                subjects.append((name, call, None))
            elif sj["kind"] == "library":
                lib = LibrarySubject(sj["path"], req["abi_inputs"], req["abi_outputs"], dev)
                prepared = []
                for r in range(rotations):
                    ts = {n: tensors[f"{r}/{n}"].to(dev).clone() for n in req["abi_inputs"]}
                    prepared.append(lib.prepare(ts))

                def poison(r, prepared=prepared):
                    for o in prepared[r][1]:
                        o.view(torch.uint8).fill_(0xFF)  # as kforge poisons outputs before every call

                def call(r, lib=lib, prepared=prepared):
                    lib.call(prepared[r])
                subjects.append((name, call, poison))
            else:
                raise RuntimeError(f"unknown subject kind '{sj['kind']}'")
        except Exception as e:  # noqa: BLE001 -- one subject failing does not stop the others
            errors[name] = f"{type(e).__name__}: {e}"

    samples = {name: [] for name, _, _ in subjects}
    rotation = {name: 0 for name, _, _ in subjects}
    start_ev = torch.cuda.Event(enable_timing=True) if cuda else None
    stop_ev = torch.cuda.Event(enable_timing=True) if cuda else None
    failed = set()

    def one(k, keep):
        name, call, prepare = subjects[k]
        if name in failed:
            return
        r = rotation[name] % rotations
        rotation[name] += 1
        if prepare:
            prepare(r)
        flush()
        sync()
        try:
            if cuda:
                h0 = time.perf_counter()  # before the start event: the host interval brackets the events'
                start_ev.record()
                call(r)
                torch.cuda.synchronize()
                stop_ev.record()
                stop_ev.synchronize()
                h1 = time.perf_counter()
                t = start_ev.elapsed_time(stop_ev) * 1e-3
                if t > (h1 - h0) * 1.05 + 50e-6:
                    raise RuntimeError(f"CUDA events measured {t:.6g} s but the host clock only {h1 - h0:.6g} s")
            else:
                h0 = time.perf_counter()
                call(r)
                t = time.perf_counter() - h0
        except Exception as e:  # noqa: BLE001
            errors[name] = f"{type(e).__name__}: {e}"
            failed.add(name)
            return
        if keep:
            samples[name].append(t)

    # Warm-up (torch.compile compiles here, untimed), then interleaved sampling; the budget
    # starts after warm-up so that a slow compile does not eat the samples.
    for _ in range(warmup):
        for k in range(len(subjects)):
            one(k, False)
    t0 = time.perf_counter()
    for i in range(max_samples):
        if len(failed) == len(subjects):
            break
        order = range(len(subjects)) if i % 2 == 0 else reversed(range(len(subjects)))
        for k in order:
            one(k, True)
        if i + 1 < min_samples:
            continue
        if all(median_ci_rel(samples[n]) <= target for n, _, _ in subjects if n not in failed):
            break
        if time.perf_counter() - t0 > budget:
            break
    return {"device": dev, "device_name": torch.cuda.get_device_name(dev) if cuda else "cpu",
            "torch_version": torch.__version__,
            "subjects": [{"name": n, "samples": samples.get(n, []), "error": errors.get(n, "")}
                         for n in [s["name"] for s in req["subjects"]]]}


COMMANDS = {"probe": cmd_probe, "describe": cmd_describe, "run": cmd_run, "time": cmd_time,
            "map": cmd_map, "run_shared": cmd_run_shared, "unmap": cmd_unmap, "stage": cmd_stage}


def missing_module_hint(e):
    """What to do when a model's file imports a module this interpreter lacks."""
    if not isinstance(e, ModuleNotFoundError) or not e.name or e.name == "torch":
        return ""
    top = e.name.split(".")[0]
    hint = (f": the file imports '{top}', which {sys.executable} does not have; install it there "
            f"({sys.executable} -m pip install {top}, or the package that provides it) "
            f"or set KFORGE_PYTHON to an interpreter that has it")
    if top == "transformers":
        hint += (" (KernelBench's level 4 files also download their model's config and weights from "
                 "the Hugging Face hub, so they need the network or a filled HF_HOME cache)")
    return hint


def run_one(command, request_path, answer_path):
    """One command: the request from a file (or none for "-"), the answer to a file. @return 0 or 1."""
    req = {}
    if request_path != "-":
        with open(request_path) as f:
            req = json.load(f)
    try:
        answer = COMMANDS[command](req)
        rc = 0
    except Exception as e:  # noqa: BLE001 -- every failure becomes an answer the C++ side can show
        traceback.print_exc()
        answer = {"error": f"{type(e).__name__}: {e}{missing_module_hint(e)}"}
        rc = 1
    with open(answer_path, "w") as f:
        json.dump(answer, f)
    return rc


def serve():
    """Requests as JSON lines on stdin ({"command", "request_file", "answer_file"}), one
    {"rc": N} line per request on descriptor 3, until stdin closes. stdout and stderr stay
    the model's: the protocol has its own descriptor."""
    proto = os.fdopen(3, "w")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
            if msg.get("command") not in COMMANDS:
                raise ValueError(f"unknown command {msg.get('command')!r}")
            rc = run_one(msg["command"], msg["request_file"], msg["answer_file"])
        except Exception:  # noqa: BLE001 -- a malformed request is answered, not fatal
            traceback.print_exc()
            rc = 2
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()  # no memory held while kforge's workers verify and time
        sys.stdout.flush()
        sys.stderr.flush()
        proto.write(json.dumps({"rc": rc}) + "\n")
        proto.flush()
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "serve":
        return serve()
    if len(argv) != 4 or argv[1] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    return run_one(argv[1], argv[2], argv[3])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
