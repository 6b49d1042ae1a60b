#!/usr/bin/python3
"""Exports the real-model test set with seeded random weights at ONNX opset 13, each with an input
and PyTorch's output on it: OUT_DIR/NAME/{model.onnx, input.npy, reference.npy}.

  resnet18, mobilenet_v2, squeezenet1_1,  torchvision classifiers, 1x3x224x224 float32 input
  efficientnet_b0, densenet121
  resnet50                                 the same, for the benchmarks
  transformer                              embedding of int64 ids (1x128, vocab 1000) + a 2-layer
                                           nn.TransformerEncoder (d_model 256, 4 heads, ffn 1024)
  lstm_classifier                          embedding of int64 ids (2x40, vocab 1000), a
                                           bidirectional batch_first LSTM (64 -> 2x96), a second
                                           LSTM (192 -> 128), a linear head on the last step
  gru_tagger                               float frames (2x50x40), a 2-layer batch_first GRU
                                           (40 -> 64), a linear head on every step
  unet                                     a small U-Net segmenter (1x3x96x128): three conv
                                           stages down, a decoder upsampling by Resize (nearest,
                                           bilinear, bilinear with align_corners) with skip
                                           concatenations, a 1x1 head to 5 classes

No pretrained weights are downloaded. torchvision's init leaves batch norms as identities (and
mobilenet_v2's activations near zero), so every batch norm gets seeded random statistics and
affine parameters, which keeps activations in a trained network's range and makes the top-1
class meaningful to compare.
Usage: export_models.py OUT_DIR [NAME ...]
"""
import os
import sys

import numpy as np
import torch
import torchvision

OPSET = 13


class Transformer(torch.nn.Module):
    def __init__(self, vocab=1000, d_model=256, heads=4, ffn=1024, layers=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d_model)
        layer = torch.nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids):
        return self.encoder(self.embed(ids))


class LstmClassifier(torch.nn.Module):
    def __init__(self, vocab=1000, embed=64, hidden=96, hidden2=128, classes=10):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, embed)
        self.lstm1 = torch.nn.LSTM(embed, hidden, batch_first=True, bidirectional=True)
        self.lstm2 = torch.nn.LSTM(2 * hidden, hidden2, batch_first=True)
        self.head = torch.nn.Linear(hidden2, classes)

    def forward(self, ids):
        y, _ = self.lstm1(self.embed(ids))
        y, _ = self.lstm2(y)
        return self.head(y[:, -1])


class GruTagger(torch.nn.Module):
    def __init__(self, features=40, hidden=64, tags=12):
        super().__init__()
        self.gru = torch.nn.GRU(features, hidden, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(hidden, tags)

    def forward(self, frames):
        y, _ = self.gru(frames)
        return self.head(y)


def conv_block(cin, cout):
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
        torch.nn.Conv2d(cout, cout, 3, padding=1), torch.nn.BatchNorm2d(cout), torch.nn.ReLU())


class UNet(torch.nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.down1, self.down2, self.down3 = conv_block(3, 16), conv_block(16, 32), conv_block(32, 64)
        self.up2, self.up1 = conv_block(64 + 32, 32), conv_block(32 + 16, 16)
        self.head = torch.nn.Conv2d(16, classes, 1)

    def forward(self, x):
        f = torch.nn.functional
        d1 = self.down1(x)
        d2 = self.down2(f.max_pool2d(d1, 2))
        d3 = self.down3(f.max_pool2d(d2, 2))
        u2 = self.up2(torch.cat([f.interpolate(d3, scale_factor=2, mode="nearest"), d2], 1))
        u1 = torch.cat([f.interpolate(u2, scale_factor=2, mode="bilinear", align_corners=False),
                        d1], 1)
        y = self.head(self.up1(u1))
        return f.interpolate(y, size=(120, 160), mode="bilinear", align_corners=True)


def unet():
    torch.manual_seed(0)
    model = UNet()
    randomize_batch_norms(model)
    model.eval()
    return model, torch.randn(1, 3, 96, 128, generator=torch.Generator().manual_seed(1)), "input"


def recurrent(name):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    if name == "lstm_classifier":
        return LstmClassifier().eval(), torch.randint(0, 1000, (2, 40), generator=g), "ids"
    return GruTagger().eval(), torch.randn(2, 50, 40, generator=g), "frames"


def classifier(name):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    randomize_batch_norms(model)
    model.eval()
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    return model, x, "input"


def randomize_batch_norms(model):
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.1 * torch.randn(n, generator=g))
                m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
                m.running_var.copy_(0.5 + torch.rand(n, generator=g))


def transformer():
    torch.manual_seed(0)
    model = Transformer()
    model.eval()
    ids = torch.randint(0, 1000, (1, 128), generator=torch.Generator().manual_seed(1))
    return model, ids, "ids"


MODELS = {
    "resnet18": lambda: classifier("resnet18"),
    "mobilenet_v2": lambda: classifier("mobilenet_v2"),
    "squeezenet1_1": lambda: classifier("squeezenet1_1"),
    "resnet50": lambda: classifier("resnet50"),  # benchmarks only (tools/bench)
    "efficientnet_b0": lambda: classifier("efficientnet_b0"),
    "densenet121": lambda: classifier("densenet121"),
    "transformer": transformer,
    "lstm_classifier": lambda: recurrent("lstm_classifier"),
    "gru_tagger": lambda: recurrent("gru_tagger"),
    "unet": unet,
}


def build(name):
    """The model, its input and the input's name: a model above, or any other torchvision
    classifier by its name (the wider set tools/bench/run_benchmarks.py --models can name)."""
    if name in MODELS:
        return MODELS[name]()
    if callable(getattr(torchvision.models, name, None)):
        return classifier(name)
    sys.exit(f"export_models: no model {name!r} (neither {', '.join(MODELS)} nor a torchvision "
             "classifier)")


def export(name, out_dir):
    model, x, input_name = build(name)
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    # nn.TransformerEncoder takes a fused fast path under no_grad that cannot be exported, so the
    # export and the reference both run with grad enabled.
    with torch.enable_grad():
        ref = model(x).detach().numpy()
        torch.onnx.export(model, (x,), os.path.join(d, "model.onnx"), opset_version=OPSET,
                          input_names=[input_name], output_names=["output"],
                          do_constant_folding=True)
    np.save(os.path.join(d, "input.npy"), x.numpy())
    np.save(os.path.join(d, "reference.npy"), ref)
    print(f"{name}: {os.path.join(d, 'model.onnx')} input {tuple(x.shape)} output {ref.shape}")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: export_models.py OUT_DIR [NAME ...]")
    names = sys.argv[2:] or list(MODELS)
    for n in names:
        export(n, sys.argv[1])


if __name__ == "__main__":
    main()
