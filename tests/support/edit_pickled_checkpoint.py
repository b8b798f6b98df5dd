"""Rewrites a PyTorch zip archive's data.pkl after an edit of the object tree it pickles,
without importing any class the pickle names (so without Ultralytics, and without running
anything a pickle says): every global becomes a stand-in class of the same module and name,
which pickles back as that global with the same arguments and state.

Usage: edit_pickled_checkpoint.py SRC.pt DST.pt EDIT [MARKER]
EDIT:
  none            nothing: the tree pickled again (a control: it must read as the source does)
  segment         the last layer of the model's yaml becomes Ultralytics' Segment head
  c2f             layer 2 of the yaml becomes C2f (a YOLOv8 block) where YOLO11 has C3k2
  scales          the yaml's scale n row becomes [0.33, 0.25, 1024] (an edited yaml's row that
                  builds the same layers: 2 x 0.33 rounds to 1 repeat, as 2 x 0.5 does)
  scales-wide     the yaml's scale n row becomes [0.5, 8, 1024] (a width yoloflow does not build)
  sppf-identity   SPPF's first conv has nn.Identity as its activation (Ultralytics 8.4's build)
  payload-state   the SPPF module's state gains an attribute whose unpickling would run
                  os.system('touch MARKER'); nothing runs here, the reduce tuple is written as is
  nan-weight      the first conv weight's storage gets a NaN (data record edited, CRC rewritten)
Prints the byte offset in the new data.pkl of the GLOBAL opcode naming the payload's function.
"""
import collections
import copy
import io
import os
import pickle
import pickletools
import struct
import sys
import types
import zipfile

_fakes = {}


def fake(module, name):
    """The stand-in for global module.name: a class registered under that name."""
    key = (module, name)
    if key not in _fakes:
        def new(cls, *args):
            obj = object.__new__(cls)
            obj._args, obj._state, obj._reduced = args, None, False
            return obj

        def setstate(self, state):
            self._state = state

        def reduce_ex(self, protocol):
            if self._reduced:
                return (type(self), self._args) if self._state is None else (type(self), self._args, self._state)
            import copyreg
            return (copyreg.__newobj__, (type(self),) + tuple(self._args), self._state)

        cls = type(name, (), {"__new__": new, "__setstate__": setstate, "__reduce_ex__": reduce_ex})
        cls.__module__, cls.__qualname__ = module, name
        # The module and its parent packages, as the pickler imports them to find the class.
        parts = module.split(".")
        for k in range(1, len(parts) + 1):
            dotted = ".".join(parts[:k])
            if not getattr(sys.modules.get(dotted), "_yoloflow_fake", False):
                sys.modules[dotted] = types.ModuleType(dotted)
                sys.modules[dotted]._yoloflow_fake = True
        setattr(sys.modules[module], name, cls)
        _fakes[key] = cls
    return _fakes[key]


class PersistentId:
    def __init__(self, pid):
        self.pid = pid


class Reader(pickle._Unpickler):
    dispatch = dict(pickle._Unpickler.dispatch)

    def find_class(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module in ("__builtin__", "builtins") and name in ("set", "frozenset"):
            return {"set": set, "frozenset": frozenset}[name]
        return fake(module, name)

    def persistent_load(self, pid):
        return PersistentId(pid)

    def load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if func in _fakes.values():  # recorded, not called
            obj = func.__new__(func, *args)
            obj._reduced = True
            self.stack[-1] = obj
        else:
            self.stack[-1] = func(*args)

    dispatch[pickle.REDUCE[0]] = load_reduce


class Writer(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, PersistentId) else None


class Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + self.marker,))


def module(tree, *path):
    m = tree
    for p in path:
        m = m._state["_modules"][p]
    return m


def main():
    src, dst, edit = sys.argv[1:4]
    marker = sys.argv[4] if len(sys.argv) > 4 else ""
    zin = zipfile.ZipFile(src)
    pkl_name = next(n for n in zin.namelist() if n.endswith("/data.pkl"))
    root = Reader(io.BytesIO(zin.read(pkl_name))).load()
    model = root["model"] if root.get("model") is not None else root["ema"]
    records = {}
    if edit == "none":
        pass
    elif edit == "segment":
        model._state["yaml"]["head"][-1][2] = "Segment"
    elif edit == "c2f":
        model._state["yaml"]["backbone"][2][2] = "C2f"
    elif edit == "scales":
        model._state["yaml"]["scales"]["n"] = [0.33, 0.25, 1024]
    elif edit == "scales-wide":
        model._state["yaml"]["scales"]["n"] = [0.5, 8, 1024]
    elif edit == "sppf-identity":
        cv1 = module(model, "model", "9", "cv1")
        identity = fake("torch.nn.modules.linear", "Identity").__new__(fake("torch.nn.modules.linear", "Identity"))
        identity._state = copy.copy(cv1._state["_modules"]["act"]._state)
        cv1._state["_modules"]["act"] = identity
    elif edit == "payload-state":
        module(model, "model", "9")._state["note"] = Payload(marker)
    elif edit == "nan-weight":
        weight = module(model, "model", "0", "conv")._state["_parameters"]["weight"]
        pid = weight._args[0]._args[0].pid  # _rebuild_parameter(_rebuild_tensor_v2(storage, ...))
        name = pkl_name[: -len("data.pkl")] + "data/" + pid[2]
        data = bytearray(zin.read(name))
        fmt = "<e" if pid[1].__qualname__ == "HalfStorage" else "<f"
        data[0:struct.calcsize(fmt)] = struct.pack(fmt, float("nan"))
        records[name] = bytes(data)
    else:
        sys.exit("unknown edit " + edit)
    out = io.BytesIO()
    Writer(out, protocol=2).dump(root)
    pkl = out.getvalue()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = pkl if info.filename == pkl_name else records.get(info.filename, zin.read(info.filename))
            zout.writestr(info.filename, data)
    for op, arg, pos in pickletools.genops(pkl):
        if op.name == "GLOBAL" and arg in ("posix system", "os system", "nt system"):
            print("payload-offset", pos)


if __name__ == "__main__":
    main()
