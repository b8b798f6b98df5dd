"""Evaluates an exported ONNX file op by op with PyTorch, in float64: a reference for what the
graph computes, independent of our exporter and of any ONNX runtime's kernels. Covers the ops
`yoloflow export` writes, NMS and the QDQ nodes of --int8 included (NonMaxSuppression as the ONNX operator's text says:
per image and class, scores above the threshold, greedy by score, IoU above the threshold
suppressed).

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


def non_max_suppression(boxes, scores, max_per_class, iou, conf):
    rows = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            idx = torch.nonzero(s > conf).flatten()
            idx = idx[torch.argsort(s[idx], descending=True, stable=True)]
            kept = []
            for i in idx.tolist():
                if len(kept) == max_per_class:
                    break
                ok = True
                for j in kept:
                    lt = torch.maximum(boxes[b, i, :2], boxes[b, j, :2])
                    rb = torch.minimum(boxes[b, i, 2:], boxes[b, j, 2:])
                    inter = (rb - lt).clamp(min=0).prod()
                    area = lambda k: (boxes[b, k, 2:] - boxes[b, k, :2]).prod()
                    if inter / (area(i) + area(j) - inter) > iou:
                        ok = False
                        break
                if ok:
                    kept.append(i)
            rows += [[b, c, i] for i in kept]
    return torch.tensor(rows, dtype=torch.int64).reshape(-1, 3)


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
        elif op == "Cast":  # float types become float64: the evaluation stays in float64
            o = i[0].long() if a["to"] == onnx.TensorProto.INT64 else i[0].double()
        elif op == "ReduceMax":
            o = i[0].amax(dim=a["axes"], keepdim=bool(a.get("keepdims", 1)))
        elif op in ("Equal", "Greater"):
            o = (i[0] == i[1]) if op == "Equal" else (i[0] > i[1])
        elif op == "Where":
            o = torch.where(i[0], i[1], i[2])
        elif op == "Min":
            o = torch.minimum(i[0], i[1])
        elif op == "Gather":
            axis = a.get("axis", 0)
            o = torch.index_select(i[0], axis, i[1].flatten()).reshape(
                list(i[0].shape[:axis]) + list(i[1].shape) + list(i[0].shape[axis + 1:]))
        elif op == "GatherND":
            o = i[0][tuple(i[1][:, k] for k in range(i[1].shape[1]))]
        elif op == "Range":
            o = torch.arange(int(i[0]), int(i[1]), int(i[2]), dtype=torch.int64)
        elif op == "TopK":
            values, indices = torch.topk(i[0], int(i[1][0]), dim=a["axis"], largest=True, sorted=True)
            v[n.output[0]], v[n.output[1]] = values, indices
            continue
        elif op == "Pad":
            r = i[0].dim()
            pads = i[1].tolist()
            flat = []
            for k in reversed(range(r)):  # F.pad: last axis first, (begin, end) pairs
                flat += [pads[k], pads[k + r]]
            o = F.pad(i[0], flat)
        elif op in ("QuantizeLinear", "DequantizeLinear"):
            # Per tensor (scalar scale) or per axis (1-D scale along `axis`), as the operator says.
            scale, zp = i[1], i[2] if len(i) > 2 and i[2] is not None else torch.zeros((), dtype=torch.uint8)
            if scale.dim() == 1 and scale.numel() > 1:
                shape = [1] * i[0].dim()
                shape[a.get("axis", 1)] = scale.numel()
                scale, zp = scale.reshape(shape), zp.reshape(shape)
            if op == "QuantizeLinear":  # in float32, as the operator computes x / y_scale
                lo, hi = (-128, 127) if zp.dtype == torch.int8 else (0, 255)
                q = torch.round(i[0].float() / scale.float()) + zp.float()
                o = q.clamp(lo, hi).to(zp.dtype)
            else:
                o = (i[0].double() - zp.double()) * scale.double()
        elif op == "NonMaxSuppression":
            o = non_max_suppression(i[0], i[1], int(i[2][0]), float(i[3][0]), float(i[4][0]))
        else:
            raise SystemExit(f"onnx_torch_eval: op {op} is not covered")
        v[n.output[0]] = o
    y = v[g.output[0].name].float().numpy()
    y.tofile(out_path)
    print("shape", " ".join(str(d) for d in y.shape))


if __name__ == "__main__":
    main()
