"""The peer of ``benchmarks/serve_peers.py``: LitServe serving the same ONNX model as ``litstarter serve``.

    <litserve venv>/bin/python benchmarks/serve_peer_litserve.py MODEL.onnx PORT

Run in a venv of its own (``serve_peers.py`` says how to make it), not the project's: it imports only LitServe,
onnxruntime, Pillow and numpy. The same work per request as ``litstarter serve``'s ``/predict``: decode the JPEG
with Pillow, convert to RGB, resize to the model's 64 x 64 (bilinear) if it differs, ``(3, H, W)`` uint8; batches
of up to 32 with no wait (``batch_timeout=0``, as ``--batch_timeout 0``); the onnxruntime session set up as ours
(all optimisations, sequential, one intra-op thread per usable core, no spinning); the top 5 classes' softmax as
``{"predictions": [{"class", "index", "prob"}, ...]}``. LitServe's one route, ``POST /predict``, takes
``{"image": "<base64>"}`` JSON or a multipart form with the file under ``image`` (it has no route for raw bytes).

A part of ``benchmarks/serve_peers.py``, which starts it, not a benchmark: no smoke of its own;
``serve_peers.py --smoke`` runs it (and skips in one line without LitServe's venv).
"""

from __future__ import annotations

import base64
import io
import os
import sys

import litserve as ls
import numpy as np
import onnxruntime as ort
from PIL import Image

SIDE, TOPK, MAX_BATCH = 64, 5, 32


class OnnxClassifier(ls.LitAPI):
    """The exported classifier behind LitServe's ``/predict``."""

    def __init__(self, model: str) -> None:
        super().__init__(max_batch_size=MAX_BATCH, batch_timeout=0.0)
        self.model = model

    def setup(self, device) -> None:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.intra_op_num_threads = len(os.sched_getaffinity(0))
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(self.model, options, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def decode_request(self, request) -> np.ndarray:
        if "image" not in request:
            raise ValueError('expected {"image": "<base64>"} or a form with the file under "image"')
        field = request["image"]
        data = base64.b64decode(field, validate=True) if isinstance(field, str) else field.file.read()
        image = Image.open(io.BytesIO(data)).convert("RGB")
        if image.size != (SIDE, SIDE):
            image = image.resize((SIDE, SIDE), Image.Resampling.BILINEAR)
        return np.asarray(image).transpose(2, 0, 1)  # (3, H, W) uint8

    def batch(self, inputs: list[np.ndarray]) -> np.ndarray:
        return np.stack(inputs)  # (B, 3, H, W)

    def predict(self, images: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input: images})[0]  # (B, K) logits

    def unbatch(self, output: np.ndarray) -> list[np.ndarray]:
        return list(output)

    def encode_response(self, logits: np.ndarray) -> dict:
        p = np.exp(logits - logits.max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")[:TOPK]
        return {"predictions": [{"class": f"class_{i}", "index": int(i), "prob": float(p[i])} for i in order]}


if __name__ == "__main__":
    model, port = sys.argv[1], int(sys.argv[2])
    server = ls.LitServer(OnnxClassifier(model), accelerator="cpu", workers_per_device=1, timeout=60)
    server.run(host="127.0.0.1", port=port, generate_client_file=False, log_level="warning")
