#!/usr/bin/python3
"""Trains the digits sample: a small CNN on scikit-learn's 8x8 handwritten digits.

Writes into samples/digits/:
  digits.onnx            the model (ONNX opset 13), input "image" float32[1,1,8,8], output "logits"
  digits.kg + weights/   the same model as a kiln graph file with .npy weights
  test_images.npy        40 held-out digits, float32[40,1,8,8] in [0, 1]
  test_labels.npy        their labels, int64[40]
Deterministic (fixed seeds). Run: /usr/bin/python3 tools/scripts/train_digits.py
"""
import os

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples", "digits")
os.makedirs(os.path.join(out, "weights"), exist_ok=True)
torch.manual_seed(0)
np.random.seed(0)

digits = load_digits()
x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
y = digits.target.astype(np.int64)
perm = np.random.permutation(len(x))
x, y = x[perm], y[perm]
n_test = 297
x_train, y_train, x_test, y_test = x[:-n_test], y[:-n_test], x[-n_test:], y[-n_test:]


class DigitsNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, t):
        t = torch.relu(self.conv1(t))
        t = self.pool(torch.relu(self.conv2(t)))
        return self.fc(t.flatten(1))


net = DigitsNet()
opt = torch.optim.Adam(net.parameters(), lr=3e-3)
xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
for epoch in range(40):
    for i in range(0, len(xt), 64):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(xt[i:i + 64]), yt[i:i + 64])
        loss.backward()
        opt.step()
net.eval()
with torch.no_grad():
    acc = (net(torch.from_numpy(x_test)).argmax(1).numpy() == y_test).mean()
print(f"held-out accuracy ({n_test} digits): {acc:.3f}")

# Weights for the graph file.
params = {"w1": net.conv1.weight, "b1": net.conv1.bias, "w2": net.conv2.weight, "b2": net.conv2.bias,
          "wf": net.fc.weight, "bf": net.fc.bias}
for name, p in params.items():
    np.save(os.path.join(out, "weights", name + ".npy"), p.detach().numpy().astype(np.float32))
shapes = {n: list(p.shape) for n, p in params.items()}
decl = "\n".join(f"weight {n}: float32[{', '.join(map(str, s))}] = npy(\"weights/{n}.npy\")" for n, s in shapes.items())
with open(os.path.join(out, "digits.kg"), "w") as f:
    f.write(f"""# The digits sample: a small CNN trained by tools/scripts/train_digits.py on scikit-learn's
# 8x8 digits (held-out accuracy {acc:.3f}). Input: one digit, values in [0, 1].
input image: float32[1, 1, 8, 8]
{decl}
c1 = conv(image, w1, bias=b1, padding=[[1, 1], [1, 1]])
r1 = relu(c1)
c2 = conv(r1, w2, bias=b2, padding=[[1, 1], [1, 1]])
r2 = relu(c2)
p2 = max_pool(r2, kernel=[2, 2], stride=[2, 2])
flat = reshape(p2, shape=[1, 256])
logits = linear(flat, wf, bias=bf)
output logits
""")

torch.onnx.export(net, torch.zeros(1, 1, 8, 8), os.path.join(out, "digits.onnx"), input_names=["image"],
                  output_names=["logits"], opset_version=13)
np.save(os.path.join(out, "test_images.npy"), x_test[:40])
np.save(os.path.join(out, "test_labels.npy"), y_test[:40])
with torch.no_grad():
    sub = (net(torch.from_numpy(x_test[:40])).argmax(1).numpy() == y_test[:40]).mean()
print(f"accuracy on the 40 committed digits: {sub:.3f}")
