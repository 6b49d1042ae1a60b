"""kiln: run kiln packages from Python, through libkiln_rt (ctypes; numpy arrays in and out).

    import kiln
    model = kiln.Model("model.kiln")                  # verified and loaded by the C runtime
    outputs = model.session(threads=2).run({"input": x})   # {"output": numpy array}

No compiler is involved: the module needs only libkiln_rt.so and numpy. The library is found as
$KILN_RT_LIBRARY if set, else where `cmake --install` put it beside this module (PREFIX/lib for
PREFIX/lib/python3/dist-packages/kiln), else on the system's library path. Every failure raises
kiln.Error with the runtime's status name and message.

A Model may be shared by any number of threads. A Session holds one model's run state: calls on
one session are serialized by a lock (so sharing one is safe, but runs one at a time); give each
thread its own session to run concurrently (ctypes releases the GIL during a run).
"""
import ctypes
import ctypes.util
import os
import threading

import numpy as np

__all__ = ["Error", "Model", "Session", "TensorInfo", "version"]


class Error(Exception):
    """A libkiln_rt call failed: .status is the status name ("KILN_INVALID_PACKAGE"), .message
    the runtime's message."""

    def __init__(self, status, message):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


# kiln_dtype numbering (kiln.h). bfloat16 has no numpy dtype: its arrays are uint16 bit patterns.
_DTYPES = {0: np.bool_, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 5: np.uint8,
           6: np.uint16, 7: np.uint32, 8: np.uint64, 9: np.float16, 10: np.uint16,
           11: np.float32, 12: np.float64}
_BFLOAT16 = 10


class _TensorInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char_p),
                ("dtype", ctypes.c_int), ("rank", ctypes.c_size_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("size_bytes", ctypes.c_size_t),
                ("axis_symbols", ctypes.POINTER(ctypes.c_int32))]


class _ModelOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("allocator", ctypes.c_void_p),
                ("skip_checksums", ctypes.c_int),
                ("trusted_keys", ctypes.c_void_p), ("num_trusted_keys", ctypes.c_size_t),
                ("require_signature", ctypes.c_int), ("pinned_sha256", ctypes.c_void_p),
                ("variant", ctypes.c_char_p)]


class _VariantInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("cpu", ctypes.c_char_p),
                ("runs_here", ctypes.c_int), ("chosen", ctypes.c_int)]


class _SessionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("num_threads", ctypes.c_size_t),
                ("arena", ctypes.c_void_p), ("arena_size", ctypes.c_size_t),
                ("profile", ctypes.c_int), ("trace", ctypes.c_int)]


def _find_library():
    env = os.environ.get("KILN_RT_LIBRARY")
    if env:
        return env
    try:  # an installed module: the install wrote where the library is, relative to here
        from kiln._install import LIBRARY
        here = os.path.dirname(os.path.abspath(__file__))
        installed = os.path.normpath(os.path.join(here, LIBRARY))
        if os.path.exists(installed):
            return installed
    except ImportError:
        pass
    found = ctypes.util.find_library("kiln_rt")
    if found:
        return found
    raise ImportError("kiln: libkiln_rt.so not found (set KILN_RT_LIBRARY to its path)")


def _load():
    lib = ctypes.CDLL(_find_library())
    P, S, V = ctypes.POINTER, ctypes.c_size_t, ctypes.c_void_p
    sigs = {
        "kiln_version": (ctypes.c_char_p, [P(ctypes.c_uint), P(ctypes.c_uint)]),
        "kiln_status_name": (ctypes.c_char_p, [ctypes.c_int]),
        "kiln_last_error_message": (ctypes.c_char_p, []),
        "kiln_model_options_init": (None, [P(_ModelOptions)]),
        "kiln_model_load_file": (ctypes.c_int, [ctypes.c_char_p, P(_ModelOptions), P(V)]),
        "kiln_model_release": (ctypes.c_int, [V]),
        "kiln_model_input_count": (ctypes.c_int, [V, P(S)]),
        "kiln_model_output_count": (ctypes.c_int, [V, P(S)]),
        "kiln_model_input_info": (ctypes.c_int, [V, S, P(_TensorInfo)]),
        "kiln_model_output_info": (ctypes.c_int, [V, S, P(_TensorInfo)]),
        "kiln_model_variant_count": (ctypes.c_int, [V, P(S)]),
        "kiln_model_variant_info": (ctypes.c_int, [V, S, P(_VariantInfo)]),
        "kiln_session_options_init": (None, [P(_SessionOptions)]),
        "kiln_session_create": (ctypes.c_int, [V, P(_SessionOptions), P(V)]),
        "kiln_session_release": (ctypes.c_int, [V]),
        "kiln_session_set_input": (ctypes.c_int, [V, S, ctypes.c_int, V, S]),
        "kiln_session_run": (ctypes.c_int, [V]),
        "kiln_session_output": (ctypes.c_int, [V, S, P(V), P(S)]),
        "kiln_session_set_input_shaped": (ctypes.c_int, [V, S, ctypes.c_int, V, S, S,
                                                         P(ctypes.c_int64)]),
        "kiln_session_output_shape": (ctypes.c_int, [V, S, P(S), P(P(ctypes.c_int64))]),
        "kiln_model_symbol_count": (ctypes.c_int, [V, P(S)]),
        "kiln_model_symbol_info": (ctypes.c_int, [V, S, P(ctypes.c_char_p), P(ctypes.c_int64),
                                                  P(ctypes.c_int64)]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


_lib = _load()


def _check(status):
    if status != 0:
        raise Error(_lib.kiln_status_name(status).decode(),
                    (_lib.kiln_last_error_message() or b"").decode(errors="replace"))


def version():
    """(library version, (format major, newest format minor it reads))."""
    major, minor = ctypes.c_uint(), ctypes.c_uint()
    v = _lib.kiln_version(ctypes.byref(major), ctypes.byref(minor)).decode()
    return v, (major.value, minor.value)


def _dims(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


class TensorInfo:
    """A model input or output: name, dtype (a numpy dtype; bfloat16 tensors are uint16 bit
    patterns, and kiln_dtype says so), shape (a tuple; for a symbolic tensor, at the symbols'
    maximums), axis_symbols (an input's per-axis symbol index into Model.symbols, -1 for a
    static axis; all -1 for a static tensor)."""

    def __init__(self, info):
        self.name = info.name.decode()
        self.kiln_dtype = info.dtype
        self.dtype = np.dtype(_DTYPES[info.dtype])
        self.shape = tuple(info.shape[i] for i in range(info.rank))
        self.size_bytes = info.size_bytes
        syms = info.axis_symbols
        self.axis_symbols = tuple(syms[i] if syms else -1 for i in range(info.rank))

    def __repr__(self):
        kind = "bfloat16" if self.kiln_dtype == _BFLOAT16 else str(self.dtype)
        return f"TensorInfo({self.name!r}, {kind}, {self.shape})"


def _read_public_key(path):
    with open(path) as f:
        text = f.read().split()
    if len(text) != 2 or text[0] != "kiln-ed25519-public-key" or len(text[1]) != 64:
        raise Error("KILN_INVALID_ARGUMENT", f"'{path}' is not a kiln public key file "
                    "(kilnc keygen writes one)")
    return bytes.fromhex(text[1])


class Model:
    """A package, verified and loaded by libkiln_rt. trust: None, or public keys (paths of the
    .pub files kilnc keygen writes, or 32-byte keys): then only a package signed by one of them
    and unchanged since loads. variant: None (the last of the package's kernel variants this CPU
    runs), or the CPU name of the one to load (kilnc compile --cpu A,B,C).
    m.variants lists the package's variants as (cpu, runs here, loaded) tuples; m.symbols the
    symbolic dims of a package compiled with --dim NAME=MIN..MAX as (name, min, max) tuples."""

    def __init__(self, path, trust=None, variant=None):
        self._handle = None
        opts = _ModelOptions()
        _lib.kiln_model_options_init(ctypes.byref(opts))
        if trust is not None:
            keys = [k if isinstance(k, (bytes, bytearray)) else _read_public_key(k) for k in trust]
            if not keys or any(len(k) != 32 for k in keys):
                raise Error("KILN_INVALID_ARGUMENT", "trust wants one or more 32-byte keys")
            self._keys = ctypes.create_string_buffer(b"".join(keys), 32 * len(keys))
            opts.trusted_keys = ctypes.cast(self._keys, ctypes.c_void_p)
            opts.num_trusted_keys = len(keys)
            opts.require_signature = 1
        if variant is not None:
            opts.variant = variant.encode()
        handle = ctypes.c_void_p()
        _check(_lib.kiln_model_load_file(os.fsencode(path), ctypes.byref(opts),
                                         ctypes.byref(handle)))
        self._handle = handle
        self._sessions = 0
        self._lock = threading.Lock()
        self.inputs = self._infos(_lib.kiln_model_input_count, _lib.kiln_model_input_info)
        self.outputs = self._infos(_lib.kiln_model_output_count, _lib.kiln_model_output_info)
        n = ctypes.c_size_t()
        _check(_lib.kiln_model_variant_count(self._handle, ctypes.byref(n)))
        self.variants = []
        for i in range(n.value):
            vi = _VariantInfo()
            vi.struct_size = ctypes.sizeof(_VariantInfo)
            _check(_lib.kiln_model_variant_info(self._handle, i, ctypes.byref(vi)))
            self.variants.append((vi.cpu.decode(), bool(vi.runs_here), bool(vi.chosen)))
        _check(_lib.kiln_model_symbol_count(self._handle, ctypes.byref(n)))
        self.symbols = []
        for i in range(n.value):
            name, lo, hi = ctypes.c_char_p(), ctypes.c_int64(), ctypes.c_int64()
            _check(_lib.kiln_model_symbol_info(self._handle, i, ctypes.byref(name),
                                               ctypes.byref(lo), ctypes.byref(hi)))
            self.symbols.append((name.value.decode(), lo.value, hi.value))

    def _infos(self, count_fn, info_fn):
        n = ctypes.c_size_t()
        _check(count_fn(self._handle, ctypes.byref(n)))
        out = []
        for i in range(n.value):
            info = _TensorInfo()
            info.struct_size = ctypes.sizeof(_TensorInfo)
            _check(info_fn(self._handle, i, ctypes.byref(info)))
            out.append(TensorInfo(info))
        return out

    def session(self, threads=1):
        """A new Session running the kernels on `threads` threads (the caller's included)."""
        return Session(self, threads)

    def close(self):
        """Releases the model (after its sessions; the garbage collector also does it)."""
        if self._handle is not None and self._sessions == 0:
            _check(_lib.kiln_model_release(self._handle))
            self._handle = None

    def __del__(self):
        if getattr(self, "_handle", None) is not None and self._sessions == 0:
            _lib.kiln_model_release(self._handle)

    def __repr__(self):
        return f"Model(inputs={self.inputs}, outputs={self.outputs})"


class Session:
    """One model's run state (arena, inputs, outputs, worker threads). run() takes
    {input name: array} and returns {output name: array} (copies the caller owns)."""

    def __init__(self, model, threads=1):
        if model._handle is None:
            raise Error("KILN_INVALID_ARGUMENT", "the model is closed")
        if not isinstance(threads, int) or threads < 1:
            raise Error("KILN_INVALID_ARGUMENT", f"threads must be a positive int, got {threads!r}")
        self._model = model
        self._handle = None
        self._lock = threading.Lock()
        opts = _SessionOptions()
        _lib.kiln_session_options_init(ctypes.byref(opts))
        opts.num_threads = threads
        handle = ctypes.c_void_p()
        _check(_lib.kiln_session_create(model._handle, ctypes.byref(opts), ctypes.byref(handle)))
        self._handle = handle
        with model._lock:
            model._sessions += 1

    def run(self, inputs):
        model = self._model
        names = {t.name for t in model.inputs}
        unknown = sorted(set(inputs) - names)
        if unknown:
            raise Error("KILN_INVALID_ARGUMENT", f"the model has no input named {unknown[0]!r} "
                        f"(its inputs: {', '.join(t.name for t in model.inputs)})")
        missing = [t.name for t in model.inputs if t.name not in inputs]
        if missing:
            raise Error("KILN_FAILED_PRECONDITION", f"input {missing[0]!r} is not given")
        with self._lock:
            if self._handle is None:
                raise Error("KILN_INVALID_ARGUMENT", "the session is closed")
            for i, t in enumerate(model.inputs):
                a = np.asarray(inputs[t.name])
                symbolic = any(k >= 0 for k in t.axis_symbols)
                if a.shape != t.shape and not symbolic:
                    raise Error("KILN_INVALID_ARGUMENT", f"input {t.name!r}: expected "
                                f"{_dims(t.shape)}, got {_dims(a.shape)}")
                if a.dtype != t.dtype:
                    raise Error("KILN_INVALID_ARGUMENT", f"input {t.name!r}: expected {t.dtype}, "
                                f"got {a.dtype}")
                a = np.ascontiguousarray(a)
                if symbolic:  # the runtime checks the shape against the symbols' bounds
                    dims = (ctypes.c_int64 * max(1, a.ndim))(*a.shape)
                    _check(_lib.kiln_session_set_input_shaped(
                        self._handle, i, t.kiln_dtype, a.ctypes.data_as(ctypes.c_void_p),
                        a.nbytes, a.ndim, dims))
                    continue
                _check(_lib.kiln_session_set_input(self._handle, i, t.kiln_dtype,
                                                   a.ctypes.data_as(ctypes.c_void_p), a.nbytes))
            _check(_lib.kiln_session_run(self._handle))
            result = {}
            for i, t in enumerate(model.outputs):
                data, size = ctypes.c_void_p(), ctypes.c_size_t()
                _check(_lib.kiln_session_output(self._handle, i, ctypes.byref(data),
                                                ctypes.byref(size)))
                rank, dims = ctypes.c_size_t(), ctypes.POINTER(ctypes.c_int64)()
                _check(_lib.kiln_session_output_shape(self._handle, i, ctypes.byref(rank),
                                                      ctypes.byref(dims)))
                out = np.empty(tuple(dims[k] for k in range(rank.value)), dtype=t.dtype)
                if size.value != out.nbytes:
                    raise Error("KILN_INTERNAL", f"output {t.name!r} has {size.value} bytes, "
                                f"its shape {out.nbytes}")
                if size.value:
                    ctypes.memmove(out.ctypes.data, data, size.value)
                result[t.name] = out
            return result

    def close(self):
        with self._lock:
            if self._handle is not None:
                _lib.kiln_session_release(self._handle)
                self._handle = None
                with self._model._lock:
                    self._model._sessions -= 1

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
