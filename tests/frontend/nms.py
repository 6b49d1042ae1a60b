#!/usr/bin/python3
"""NonMaxSuppression beyond the node tests: random boxes (2 batches, 3 classes, 60 boxes, many
overlapping), both box encodings, max_output_boxes_per_class, iou_threshold and score_threshold
given at run time, against torchvision.ops.nms per batch and class (after the score filter, cut
at max_output_boxes_per_class) and against a numpy transcription of the spec. The output's first
dim is the dim parameter 'selected' with --dim selected=0..360: the runtime reports how many
boxes each run selected. A package planned for fewer rows than a run selects refuses that run.

Usage: nms.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
import torch
import torchvision
from onnx import TensorProto, helper

import onnx_case

B, C, N = 2, 3, 60


def model(center, rows):
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score"],
                            ["selected"], name="nms", center_point_box=int(center))
    g = helper.make_graph(
        [node], "nms",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [B, N, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [B, C, N]),
         helper.make_tensor_value_info("max_out", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("iou", TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("score", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, [rows, 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])


def as_corners(boxes, center):
    """(x1, y1, x2, y2) with x1 <= x2, y1 <= y2, from either encoding."""
    if center:
        xc, yc, w, h = np.moveaxis(boxes, -1, 0)
        return np.stack([xc - w / 2, yc - h / 2, xc + w / 2, yc + h / 2], -1)
    y1, x1, y2, x2 = np.moveaxis(boxes, -1, 0)
    return np.stack([np.minimum(x1, x2), np.minimum(y1, y2), np.maximum(x1, x2),
                     np.maximum(y1, y2)], -1)


def reference(boxes, scores, max_out, iou, score, center):
    rows = []
    for b in range(B):
        c_boxes = torch.from_numpy(as_corners(boxes[b], center))
        for c in range(C):
            s = scores[b, c]
            keep_idx = np.nonzero(s > score)[0]
            if keep_idx.size == 0 or max_out == 0:
                continue
            kept = torchvision.ops.nms(c_boxes[keep_idx], torch.from_numpy(s[keep_idx]), iou)
            for i in keep_idx[kept.numpy()][:max_out]:
                rows.append([b, c, int(i)])
    return np.array(rows, np.int64).reshape(-1, 3)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: nms.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(21)
    ok = []
    for center in (False, True):
        m = model(center, "selected")
        d = os.path.join(work, f"center{int(center)}")
        pkg = onnx_case.compile_model(kilnc, d, m, ["--dim", f"selected=0..{B * C * N}"])
        for trial, (max_out, iou, score) in enumerate([(7, 0.4, 0.2), (60, 0.5, 0.0),
                                                       (3, 0.1, 0.6), (0, 0.5, 0.0)]):
            xy = rng.uniform(0, 10, (B, N, 2)).astype(np.float32)
            wh = rng.uniform(0.5, 4, (B, N, 2)).astype(np.float32)
            boxes = (np.concatenate([xy + wh / 2, wh], -1) if center else
                     np.concatenate([xy[..., ::-1], (xy + wh)[..., ::-1]], -1))  # [y1, x1, y2, x2]
            if not center and trial == 1:  # opposite corners the other way round
                boxes = boxes[..., [2, 3, 0, 1]]
            scores = rng.uniform(0, 1, (B, C, N)).astype(np.float32)
            feed = {"boxes": boxes, "scores": scores, "max_out": np.array([max_out], np.int64),
                    "iou": np.array([iou], np.float32), "score": np.array([score], np.float32)}
            got = onnx_case.run_package(kiln_run, d, pkg, m, feed, f"t{trial}")["selected"]
            want = reference(boxes, scores, max_out, iou, score, center)
            good = got.shape == want.shape and np.array_equal(got, want)
            print(f"center_point_box={int(center)} max_out={max_out} iou={iou} score={score}: "
                  f"{got.shape[0]} boxes selected: {'ok' if good else 'FAILED'}")
            if not good:
                print(f"  got  {got.tolist()}\n  want {want.tolist()}")
            ok.append(good)
    # Planned for 4 rows, a run that selects more is refused naming the size.
    m = model(False, 4)
    d = os.path.join(work, "four")
    pkg = onnx_case.compile_model(kilnc, d, m)
    feed = {"boxes": np.tile(np.array([0, 0, 1, 1], np.float32) * np.arange(1, N + 1)[:, None],
                             (B, 1, 1)).astype(np.float32),
            "scores": rng.uniform(0.5, 1, (B, C, N)).astype(np.float32),
            "max_out": np.array([5], np.int64), "iou": np.array([0.99], np.float32),
            "score": np.array([0.0], np.float32)}
    ok.append(onnx_case.run_refused(kiln_run, d, pkg, feed,
                                    "the size 'selected.rows' is 30, outside the [0, 4]",
                                    "30 boxes in a package of 4 rows"))
    print(f"non-max suppression: {sum(ok)} of {len(ok)} checks pass")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
