#!/usr/bin/python3
"""The pictures kilnc draws, checked against the package and the plan they show:
`kilnc inspect PKG --svg` (the memory plan as a timeline, the groups' launches above it) and
`kilnc plan MODEL --dot` (the kernel graph), for a graph file and an ONNX model.

- SVG: well-formed XML; one rectangle per arena slot (`kilnc inspect --json` counts them), each
  inside the arena, and no two slots live in a common group share a byte (what the memory plan
  promises, read back from the picture); one box per launch; the slots' labels name model nodes.
- DOT: Graphviz renders it (`dot -Tsvg`); one node per launch, labelled with the nodes it fuses;
  every launch but the first has an incoming edge.

usage: pictures.py KILNC MODEL.kg MODEL.onnx WORKDIR
"""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

failures = []
SVG = "{http://www.w3.org/2000/svg}"


def check(ok, what):
    print(f"{'ok' if ok else 'FAILED'}: {what}")
    if not ok:
        failures.append(what)


def svg_checks(kilnc, model, work, node_name):
    name = os.path.splitext(os.path.basename(model))[0]
    pkg, svg = os.path.join(work, name + ".kiln"), os.path.join(work, name + ".svg")
    subprocess.run([kilnc, "compile", model, "-o", pkg, "--quiet"], check=True)
    meta = json.loads(subprocess.run([kilnc, "inspect", pkg, "--json", "--svg", svg], check=True,
                                     capture_output=True, text=True).stdout)
    root = ET.parse(svg).getroot()
    slots = [g for g in root.iter(SVG + "g") if g.get("class") == "slot"]
    launches = [g for g in root.iter(SVG + "g") if g.get("class") == "launch"]
    check(len(slots) == meta["arena_slots"],
          f"{name}: {len(slots)} slot rectangles for {meta['arena_slots']} arena slots")
    check(len(launches) == meta["launches"],
          f"{name}: {len(launches)} launch boxes for {meta['launches']} launches")
    rects = [(int(g.get("data-offset")), int(g.get("data-size")), int(g.get("data-first")),
              int(g.get("data-last")), g.find(SVG + "title").text) for g in slots]
    check(all(o + s <= meta["arena_bytes"] for o, s, _, _, _ in rects), f"{name}: slots fit the arena")
    clash = [(a[4], b[4]) for i, a in enumerate(rects) for b in rects[i + 1:]
             if a[2] <= b[3] and b[2] <= a[3] and a[0] < b[0] + b[1] and b[0] < a[0] + a[1]]
    check(not clash, f"{name}: no two live slots share a byte {clash[:1]}")
    check(any(node_name in t for *_, t in rects), f"{name}: slots are labelled with model nodes")
    # The drawn geometry is the data's: y grows with the offset.
    ys = sorted((float(g.find(SVG + "rect").get("y")), int(g.get("data-offset"))) for g in slots)
    check(all(a[1] <= b[1] for a, b in zip(ys, ys[1:])), f"{name}: y follows the arena offset")
    return meta


def dot_checks(kilnc, model, work, meta, fused):
    name = os.path.splitext(os.path.basename(model))[0]
    dot, out = os.path.join(work, name + ".dot"), os.path.join(work, name + ".dot.svg")
    subprocess.run([kilnc, "plan", model, "--dot", dot], check=True, capture_output=True)
    r = subprocess.run(["dot", "-Tsvg", dot, "-o", out], capture_output=True, text=True)
    check(r.returncode == 0 and os.path.getsize(out) > 0, f"{name}: Graphviz renders the DOT {r.stderr}")
    text = open(dot).read()
    labels = dict(re.findall(r'^\s+l(\d+) \[label="([^"]*)"', text, re.M))
    nodes = set(labels)
    check(len(nodes) == meta["launches"], f"{name}: {len(nodes)} kernel nodes for {meta['launches']} launches")
    targets = set(re.findall(r"-> l(\d+) ", text))
    # A padded map's border is stored by kernels that read nothing (they write the fill value).
    readers = {n for n in nodes if "(border)" not in labels[n]}
    check(readers - targets <= {"0"}, f"{name}: every launch after the first reads an edge")
    check(fused in text, f"{name}: nodes are labelled with the model nodes they fuse ({fused})")


def main():
    kilnc, kg, onnx, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    meta = svg_checks(kilnc, kg, work, "c1")
    dot_checks(kilnc, kg, work, meta, "c1+r1+p1")
    meta = svg_checks(kilnc, onnx, work, "/conv1/Conv")
    dot_checks(kilnc, onnx, work, meta, "/pool/MaxPool")
    print(f"pictures: {'all checks pass' if not failures else f'{len(failures)} FAILED'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
