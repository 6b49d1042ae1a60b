#!/usr/bin/python3
"""TfIdfVectorizer's IDF and TFIDF modes with weights (the node tests cover TF only), 1-D and
2-D inputs, trigrams with skips, against a brute-force count over every start and skip.

Usage: tfidf_modes.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

import onnx_case

# 1-grams [1, 2], 2-grams [(2, 3), (3, 1)], 3-grams [(1, 2, 3)]
POOL = [1, 2, 2, 3, 3, 1, 1, 2, 3]
COUNTS = [0, 2, 6]
GRAMS = [(1,), (2,), (2, 3), (3, 1), (1, 2, 3)]
INDEXES = [4, 0, 3, 1, 2]
WEIGHTS = [0.5, 2.0, 1.5, 0.25, 3.0]


def reference(x, mode, min_n, max_n, max_skip):
    rows = x if x.ndim == 2 else x[None]
    out = np.zeros((rows.shape[0], max(INDEXES) + 1), np.float32)
    for r, row in enumerate(rows):
        for e, gram in enumerate(GRAMS):
            g = len(gram)
            if not min_n <= g <= max_n:
                continue
            c = 0
            for skip in range(0, 1 if g == 1 else max_skip + 1):
                d = skip + 1
                for s in range(len(row)):
                    if s + (g - 1) * d < len(row) and all(row[s + j * d] == gram[j] for j in range(g)):
                        c += 1
            v = {"TF": c, "IDF": WEIGHTS[e] if c else 0.0, "TFIDF": c * WEIGHTS[e]}[mode]
            out[r, INDEXES[e]] = v
    return out if x.ndim == 2 else out[0]


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: tfidf_modes.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(8)
    ok = []
    for i, (mode, shape, min_n, max_n, skip) in enumerate([
            ("IDF", (3, 12), 1, 3, 2), ("TFIDF", (2, 10), 2, 3, 1), ("TFIDF", (14,), 1, 2, 3)]):
        x = rng.integers(0, 5, shape).astype(np.int64)
        want = reference(x, mode, min_n, max_n, skip)
        name = f"tfidf_{mode}_{i}"
        d = os.path.join(work, name)
        node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name=name, mode=mode,
                                min_gram_length=min_n, max_gram_length=max_n, max_skip_count=skip,
                                pool_int64s=POOL, ngram_counts=COUNTS, ngram_indexes=INDEXES,
                                weights=WEIGHTS)
        g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.INT64, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, want.shape)])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
        out = onnx_case.run_model(kilnc, kiln_run, d, model, {"x": x})
        got = out["y"]
        good = got.shape == want.shape and np.allclose(got, want, rtol=1e-6)
        print(f"{name} {shape}: {'ok' if good else 'FAILED'}" + ("" if good else f"\n  {got}\n  {want}"))
        ok.append(good)
    print(f"tfidf: {sum(ok)} of {len(ok)} match")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
