"""After training: export to every format, each verified against eager, INT8, and inference on files.

Importing ``litstarter.extras.deploy.infer`` imports no torch: inference on an ONNX model runs without it.
"""

COMMANDS = {
    "export": ("export", "export a checkpoint to weights.pt, TorchScript, torch.export, ONNX and INT8, each verified"),
    "infer": ("infer", "classify image files with a checkpoint or any exported model, to a CSV"),
}
NEEDS = {"export": ("onnx", "onnxscript", "onnxruntime")}
