"""Evaluates an exported ONNX file op by op with PyTorch, in float64: a reference for what the
graph computes, independent of our exporter and of any ONNX runtime's kernels. Covers the ops
`yoloflow export` writes without --nms.

usage: onnx_torch_eval.py MODEL.onnx INPUT.bin B C H W OUTPUT.bin
INPUT.bin: float32 NCHW; OUTPUT.bin: the graph's output as float32, its shape printed.
"""
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def main():
    path, inp, b, c, h, w, out_path = sys.argv[1:8]
    g = onnx.load(path).graph
    v = {}
    for t in g.initializer:
        a = torch.from_numpy(numpy_helper.to_array(t).copy())
        v[t.name] = a.double() if a.is_floating_point() else a
    x = np.fromfile(inp, np.float32).reshape(int(b), int(c), int(h), int(w))
    v[g.input[0].name] = torch.from_numpy(x).double()
    for n in g.node:
        a, i, op = attrs(n), [v[s] if s else None for s in n.input], n.op_type
        if op == "Conv":
            o = F.conv2d(i[0], i[1], i[2] if len(i) > 2 else None, a["strides"], a["pads"][:2], 1, a.get("group", 1))
        elif op == "MaxPool":
            o = F.max_pool2d(i[0], a["kernel_shape"], a["strides"], a["pads"][:2])
        elif op == "Resize":  # nearest, asymmetric, floor: integer scales
            assert a["mode"] == b"nearest", a
            o = F.interpolate(i[0], scale_factor=(float(i[2][2]), float(i[2][3])), mode="nearest")
        elif op in ("Add", "Sub", "Mul", "Div"):
            o = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div}[op](i[0], i[1])
        elif op == "Sigmoid":
            o = torch.sigmoid(i[0])
        elif op == "MatMul":
            o = i[0] @ i[1]
        elif op == "Softmax":
            o = torch.softmax(i[0], a["axis"])
        elif op == "Concat":
            o = torch.cat(i, a["axis"])
        elif op == "Split":
            for name, t in zip(n.output, torch.split(i[0], i[1].tolist(), a["axis"])):
                v[name] = t
            continue
        elif op == "Slice":
            assert len(i) == 4, "Slice with steps"
            axis, start, end = int(i[3][0]), int(i[1][0]), int(i[2][0])
            o = i[0].narrow(axis, start, min(end, i[0].shape[axis]) - start)
        elif op == "Reshape":
            shape = [int(s) if int(s) != 0 else i[0].shape[k] for k, s in enumerate(i[1].tolist())]
            o = i[0].reshape(shape)
        elif op == "Transpose":
            o = i[0].permute(a["perm"])
        elif op == "Shape":
            o = torch.tensor(i[0].shape, dtype=torch.int64)
        elif op == "CumSum":
            o = torch.cumsum(i[0], int(i[1]))
        elif op == "Cast":  # float types only here: the evaluation stays in float64
            o = i[0]
        else:
            raise SystemExit(f"onnx_torch_eval: op {op} is not covered")
        v[n.output[0]] = o
    y = v[g.output[0].name].float().numpy()
    y.tofile(out_path)
    print("shape", " ".join(str(d) for d in y.shape))


if __name__ == "__main__":
    main()
