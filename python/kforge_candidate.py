#!/usr/bin/env python3
"""A Python candidate (KernelBench's `ModelNew`) inside kforge's worker.

A Python candidate is a .py file defining `class ModelNew(torch.nn.Module)`: constructed with
the problem's init values ([torch] init_inputs; none for a native problem), `forward(*inputs)`
returns the output tensor or a tuple of them. It may use Triton, load_inline, CuTe DSL or plain
torch. kforge runs it through the same ABI as a C++ candidate: the worker (a C++ process,
confined) embeds this interpreter and calls `Host.forward(address of kf_args)` from its
kf_forward, so the worker's timer, the judge, the guards and the launch watch are the same
code as for C++. Nothing here is trusted for a verdict: the candidate shares this interpreter.

    python3 kforge_candidate.py build CANDIDATE.py SPEC.json ANSWER.json
        The build phase: imports the file (load_inline compiles here), constructs ModelNew and
        calls it once on random inputs of the problem's shapes (Triton JITs here), with the
        JIT caches in the build's folder (SPEC's "jit_dir"). ANSWER gets what the worker needs
        to embed this interpreter (libpython, sys.path), or {"error": ...}.

SPEC (src/worker/python_candidate.cpp writes it): the bridge's torch request
(src/bridge/torch_reference.cpp: inputs, params, outputs, abi_inputs, init_inputs, scalars,
dtype) plus "device" ("cpu" or "cuda:N") and "jit_dir".

How outputs are returned: ModelNew returns new tensors; they are copied into kforge's
(poisoned) output buffers on the call's stream: by the worker after the timer stopped when the
copy is a plain one (same dtype, contiguous), here inside the timed call when it converts. Inputs and params are
views of kforge's buffers (no copy): a ModelNew that writes to them fails inputs_unchanged.
"""
import ctypes
import importlib.util
import json
import math
import os
import shutil
import sys
import time
import traceback

if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "build":
    # A build that runs long says where it is: every thread's stack every 45 s, beside its
    # answer (the JIT folder, the one place it may write), which kforge shows if it times out.
    import faulthandler
    _stalled = open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[4])), "build-stalled.txt"), "w")
    faulthandler.dump_traceback_later(45, repeat=True, file=_stalled)

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kforge_torch import KF_NAMES, KfArgs, KfTensor, as_outputs, honest_fp32  # noqa: E402

_ARGS_SIZE = ctypes.sizeof(KfArgs)
_TENSOR_SIZE = ctypes.sizeof(KfTensor)
_KF_DTYPES = {v: KF_NAMES[k] for k, v in
              {"f16": 1, "bf16": 2, "f32": 3, "f64": 4, "i8": 5, "i32": 6, "i64": 7, "u8": 8, "bool": 9}.items()}


def jit_environment(jit_dir, building):
    """Triton's and load_inline's caches. The build writes them in the candidate's own JIT
    folder (<cache>/jit/<build key>); a worker reads that folder and writes nothing there:
    Triton's cache is copied into the worker's private scratch ($HOME) and used from there
    (a kernel Triton must compile again lands in the copy, gone with the worker), and a
    load_inline extension the build compiled is imported as built (_prebuilt_extensions)."""
    _libcuda_for_triton()
    if not jit_dir:
        return
    triton = os.path.join(jit_dir, "triton")
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(jit_dir, "torch_extensions")
    os.environ.setdefault("MAX_JOBS", "4")
    if building:
        os.environ["TRITON_CACHE_DIR"] = triton
        return
    private = os.path.join(os.environ.get("HOME") or "/tmp", "triton")
    if os.path.isdir(triton) and not os.path.exists(private):
        shutil.copytree(triton, private, symlinks=False)
    os.environ["TRITON_CACHE_DIR"] = private
    _prebuilt_extensions()


def _libcuda_for_triton():
    """Triton finds libcuda.so by running `ldconfig -p`; a confined worker runs no programs.
    The folder of the libcuda this process has loaded (the worker's CUDA context) is told it
    directly."""
    if os.environ.get("TRITON_LIBCUDA_PATH"):
        return
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if "/" in line else ""
                if os.path.basename(path).startswith("libcuda.so"):
                    os.environ["TRITON_LIBCUDA_PATH"] = os.path.dirname(path)
                    return
    except OSError:
        pass
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/cuda/compat", "/usr/lib/wsl/lib"):
        if os.path.exists(os.path.join(d, "libcuda.so.1")):
            os.environ["TRITON_LIBCUDA_PATH"] = d
            return


def _prebuilt_extensions():
    """torch.utils.cpp_extension.load/load_inline, in a worker: the extension the build phase
    compiled (same name, same folder) is imported without running ninja or the compiler again."""
    try:
        import torch.utils.cpp_extension as ext
    except Exception:  # noqa: BLE001 -- no extensions, nothing to patch
        return

    def prebuilt(original):
        def load(name, *args, **kwargs):
            folder = kwargs.get("build_directory") or os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], name)
            so = os.path.join(folder, f"{name}.so")
            if not os.path.isfile(so):
                return original(name, *args, **kwargs)
            if not kwargs.get("is_python_module", True):
                torch.ops.load_library(so)
                return so
            spec = importlib.util.spec_from_file_location(name, so)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
        return load

    ext.load = prebuilt(ext.load)
    ext.load_inline = prebuilt(ext.load_inline)


def resolve_device(name):
    """"cuda": the device of the CUDA context current on this thread (the worker's), else 0."""
    if name != "cuda":
        return torch.device(name)
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        d = ctypes.c_int(-1)
        if cu.cuCtxGetDevice(ctypes.byref(d)) == 0 and d.value >= 0:
            return torch.device("cuda", d.value)
    except OSError:
        pass
    return torch.device("cuda", 0)


def load_candidate(path):
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("kforge_candidate_module", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{path}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kforge_candidate_module"] = mod
    spec.loader.exec_module(mod)
    cls = getattr(mod, "ModelNew", None)
    if cls is None:
        raise RuntimeError(f"{path}: a Python candidate defines class ModelNew(torch.nn.Module); none is defined")
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise RuntimeError(f"{path}: ModelNew is not a torch.nn.Module subclass")
    return cls


def construct(cls, spec, device):
    init = spec.get("init_inputs", "[]")
    init = json.loads(init) if isinstance(init, str) else init
    torch.manual_seed(0)  # as the reference's module is built (kforge_torch.Bridge.model)
    m = cls(*init) if spec.get("model") else cls()
    if isinstance(m, torch.nn.Module):
        m = m.to(device)
        m.eval()
    return m


def module_params(spec):
    """(ABI name, ModelNew attribute) of the inputs that are the module's parameters: an imported
    problem's params. A native problem (no [torch] module) passes every input to forward, in the
    problem's order, params included."""
    return spec.get("params", []) if spec.get("model") else []


class Host:
    """One ModelNew, called through kf_args (the worker's kf_forward)."""

    def __init__(self, candidate, spec):
        t0 = time.monotonic_ns()  # CLOCK_MONOTONIC, the worker's steady_clock: spans it can place
        honest_fp32()
        self.spec = spec
        self.device = resolve_device(spec.get("device", "cpu"))
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        t1 = time.monotonic_ns()
        jit_environment(spec.get("jit_dir"), building=False)
        t2 = time.monotonic_ns()
        cls = load_candidate(candidate)
        t3 = time.monotonic_ns()
        self.model = construct(cls, spec, self.device)
        # Where a worker's start goes, for phases.steps (load_steps_json): (step, begin, end) in ns.
        self.load_steps = [("Host: device", t0, t1), ("Host: JIT caches", t1, t2), ("Host: candidate module", t2, t3),
                           ("Host: ModelNew()", t3, time.monotonic_ns())]
        params = {n: t for n, t in self.model.named_parameters()}
        params.update(dict(self.model.named_buffers()))
        abi = spec["abi_inputs"]
        self.param_slots = []  # (ABI index, the module's tensor)
        for kname, tname in module_params(spec):
            if tname not in params:
                raise RuntimeError(f"ModelNew has no parameter or buffer '{tname}' (the problem's param '{kname}'): "
                                   f"name its parameters as the reference's Model does")
            self.param_slots.append((abi.index(kname), params[tname]))
        self.forward_slots = [abi.index(n) for n in spec["inputs"]] if spec.get("model") else list(range(len(abi)))
        self.scalars = {abi.index(n) for n in spec.get("scalars", [])}
        self.bound = None      # the entry whose param inputs the module's parameters view now
        self.entries = {}      # kf_args address -> _prepare's answer
        self.streams = {}
        self.tables = {}       # the worker's placements array, as ctypes
        self.pending = None    # what the last call returned, alive until the worker copied it
        self.last_error = ""

    def _view(self, kt):
        dtype = _KF_DTYPES[kt.dtype]
        shape = [kt.shape[i] for i in range(kt.ndim)]
        n = math.prod(shape)
        nbytes = n * torch.empty(0, dtype=dtype).element_size()
        if n == 0:
            return torch.empty(shape, dtype=dtype, device=self.device)
        if self.device.type == "cuda":
            class Raw:  # device bytes as __cuda_array_interface__: torch.as_tensor views them
                __cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (kt.data, False),
                                            "version": 3, "strides": None}
            raw = torch.as_tensor(Raw(), device=self.device)
        else:
            raw = torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(kt.data), dtype=torch.uint8)
        strides = [kt.strides[i] for i in range(kt.ndim)]
        return raw.view(dtype).as_strided(shape, strides)

    def _prepare(self, address):
        """What a call on this kf_args needs, built once per (address, contents): the views of
        kforge's buffers, the module's parameters bound to this set's param inputs, the stream,
        and the bytes of the kf_args and its descriptor tables as they were (_unchanged)."""
        a = KfArgs.from_address(address)
        # ctypes buffers over those bytes, made here once: the tables' pointers are in the
        # kf_args bytes, so they stay the tables' while those bytes do.
        described = [(ctypes.c_char * _ARGS_SIZE).from_address(address)]
        described += [(ctypes.c_char * (n * _TENSOR_SIZE)).from_address(ctypes.addressof(t.contents))
                      for t, n in ((a.inputs, a.num_inputs), (a.outputs, a.num_outputs)) if n]
        ins = [self._view(a.inputs[i]) for i in range(a.num_inputs)]
        outs = [self._view(a.outputs[i]) for i in range(a.num_outputs)]
        stream = None
        if self.device.type == "cuda":
            stream = self.streams.get(a.stream)
            if stream is None:
                stream = (torch.cuda.ExternalStream(a.stream, device=self.device) if a.stream
                          else torch.cuda.default_stream(self.device))
                self.streams[a.stream] = stream
        ranges = [(t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in ins if t.numel()]
        # Per output, what the hot path compares a returned tensor with: elements, device
        # (get_device: -1 on the CPU), dtype, whether a byte copy lands where its elements
        # belong (contiguous), the address and byte size to copy to.
        meta = [(o.numel(), o.get_device(), o.dtype, o.is_contiguous(), o.data_ptr(), o.numel() * o.element_size())
                for o in outs]
        return {"described": described, "snapshot": [b.raw for b in described], "ins": ins, "outs": outs,
                "stream": stream, "in_ranges": ranges, "meta": meta,
                "args": [None if i in self.scalars else ins[i] for i in self.forward_slots]}

    def _bind(self, entry):
        """The module's parameters become views of this set's param inputs (once per set)."""
        if self.bound is entry:
            return
        for i, t in self.param_slots:
            src = entry["ins"][i]
            if src.numel() != t.numel():
                raise RuntimeError(f"ModelNew's parameter has {t.numel()} elements; the problem's has {src.numel()}")
            t.data = src.view(t.shape) if src.is_contiguous() else src.reshape(t.shape)
        self.bound = entry

    @staticmethod
    def _unchanged(entry):
        # The kf_args bytes and its tensor descriptors as they were when the entry was made: a
        # set whose pointers or shapes changed is prepared again, one that did not is served
        # from the entry (the hot path). The kf_args first: if it changed, its old tables'
        # buffers are not read.
        for buf, raw in zip(entry["described"], entry["snapshot"]):
            if buf.raw != raw:
                return False
        return True

    def forward(self, address, placements=0):
        """kf_forward's body: 0, or 1 with last_error set. Kept short: every line here is the
        Python call overhead a timed call pays (bench/python_candidates.sh overhead measures it).
        A returned tensor that is a plain copy (dtype, contiguous, element count) is listed at
        `placements` ([count, (dst, src, bytes)...], the worker's array) for the worker to copy
        after the timer stopped (src/worker/python_library.cpp); any other is converted into
        kforge's output here, inside the call. The returned tensors stay alive until the next call."""
        try:
            entry = self.entries.get(address)
            if entry is None or not self._unchanged(entry):
                entry = self.entries[address] = self._prepare(address)
            self._bind(entry)
            args = entry["args"]
            if self.scalars:  # numbers are read from their one-element inputs at every call
                args = [entry["ins"][i].reshape(-1)[0].item() if i in self.scalars else x
                        for i, x in zip(self.forward_slots, args)]
            torch._C._set_grad_enabled(False)
            if entry["stream"] is not None:  # reset every call: the candidate may have changed it
                torch.cuda.set_stream(entry["stream"])
            self.pending = None
            ys = self.model(*args)
            if isinstance(ys, torch.Tensor):
                ys = (ys,)
            else:
                ys = as_outputs(ys)
            outs = entry["outs"]
            if len(ys) != len(outs):
                raise RuntimeError(f"ModelNew.forward returned {len(ys)} tensors; the problem has {len(outs)} outputs")
            table = self._placements(placements, len(outs)) if placements else None
            listed = 0
            for k, (y, dst, (n, device, dtype, plain, dst_ptr, nbytes)) in enumerate(zip(ys, outs, entry["meta"])):
                if y.numel() != n:
                    raise RuntimeError(f"output {k}: ModelNew returned shape {list(y.shape)}; the problem's is "
                                       f"{list(dst.shape)}")
                if y.get_device() != device:
                    raise RuntimeError(f"output {k}: ModelNew returned a tensor on {y.device}; kforge's outputs "
                                       f"are on {dst.device}")
                if (table is not None and plain and y.dtype == dtype and y.is_contiguous()
                        and not self._in_inputs(entry, y)):
                    if n:
                        at = 3 * listed
                        table[1 + at] = dst_ptr
                        table[2 + at] = y.data_ptr()
                        table[3 + at] = nbytes
                        listed += 1
                else:  # converted (dtype, layout) on the call's stream: inside the timed interval
                    dst.copy_(y.reshape(dst.shape) if y.shape != dst.shape else y)
            if table is not None:
                table[0] = listed
            self.pending = ys
            return 0
        except Exception as e:  # noqa: BLE001 -- a failing candidate is data, said in last_error
            self.last_error = f"{type(e).__name__}: {e}\n" + traceback.format_exc(limit=8)[-4000:]
            return 1

    @staticmethod
    def _in_inputs(entry, y):
        """y is (a view of) one of kforge's inputs: then the copy is the call's whole work, and
        it is made inside the timed call, as a kf_forward candidate would have to."""
        p = y.data_ptr()
        for a, b in entry["in_ranges"]:  # a loop, not any(generator): this is the hot path
            if a <= p < b:
                return True
        return False

    def load_steps_json(self):
        return json.dumps(self.load_steps)

    def _placements(self, address, n):
        table = self.tables.get(address)
        if table is None or len(table) != 1 + 3 * n:
            table = self.tables[address] = (ctypes.c_uint64 * (1 + 3 * n)).from_address(address)
        return table


def safe_load(candidate, spec_json):
    """The worker's entry: a Host whose forward(address) is kf_forward, or why not (a str)."""
    try:
        return Host(candidate, json.loads(spec_json))
    except BaseException as e:  # noqa: BLE001 -- the reason goes to the verdict
        return f"loading the Python candidate failed: {type(e).__name__}: {e}\n" + traceback.format_exc(limit=8)[-4000:]


def random_inputs(spec, device):
    shapes = {o["name"]: o for o in spec.get("abi_shapes", [])}
    out = []
    for name in spec["abi_inputs"]:
        s = shapes[name]
        dtype = KF_NAMES[s["dtype"]]
        if dtype.is_floating_point:
            out.append(torch.randn(s["shape"], device=device).to(dtype))
        elif dtype == torch.bool:
            out.append(torch.rand(s["shape"], device=device) > 0.5)
        else:
            out.append(torch.randint(0, 4, s["shape"], device=device, dtype=dtype))
    return out


def cmd_build(candidate, spec):
    honest_fp32()
    info = {}
    device = resolve_device(spec.get("device", "cpu"))
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"this torch ({torch.__version__}) cannot use CUDA, and the problem runs on {device}")
        torch.cuda.set_device(device)
    jit_environment(spec.get("jit_dir"), building=True)
    t0 = time.perf_counter()
    host_cls = load_candidate(candidate)
    t_import = time.perf_counter() - t0
    model = construct(host_cls, spec, device)
    # The first call on the problem's shapes: Triton's JIT and any lazy compile happen here,
    # into the build's own caches, not in a timed or judged call.
    t1 = time.perf_counter()
    ins = random_inputs(spec, device)
    abi = spec["abi_inputs"]
    params = dict(model.named_parameters())
    params.update(dict(model.named_buffers()))
    for kname, tname in module_params(spec):
        if tname not in params:
            raise RuntimeError(f"ModelNew has no parameter or buffer '{tname}' (the problem's param '{kname}'): "
                               f"name its parameters as the reference's Model does")
    fwd = [abi.index(n) for n in spec["inputs"]] if spec.get("model") else list(range(len(abi)))
    scalars = {abi.index(n) for n in spec.get("scalars", [])}
    with torch.no_grad():
        ys = as_outputs(model(*[ins[i].reshape(-1)[0].item() if i in scalars else ins[i] for i in fwd]))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    info.update({"import_s": t_import, "first_call_s": time.perf_counter() - t1, "outputs": len(ys)})
    return info


def main(argv):
    if len(argv) != 5 or argv[1] != "build":
        print(__doc__, file=sys.stderr)
        return 2
    answer = {}
    try:
        with open(argv[3]) as f:
            spec = json.load(f)
        answer = cmd_build(argv[2], spec)
        code = 0
    except BaseException as e:  # noqa: BLE001 -- the build's diagnostics: the exception first, then where
        answer = {"error": f"{type(e).__name__}: {e}\n" + traceback.format_exc(limit=12)[-6000:]}
        code = 1
    with open(argv[4], "w") as f:
        json.dump(answer, f)
    if "_stalled" in globals():
        faulthandler.cancel_dump_traceback_later()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
