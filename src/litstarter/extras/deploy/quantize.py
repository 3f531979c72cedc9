"""INT8 ONNX by ONNX Runtime quantization: static QDQ, per channel, calibrated on real training images.

Static quantization quantizes the convolutions' activations too (the speed-up on CPU); it needs a few hundred
representative inputs to calibrate activation ranges. Dynamic quantization (weights only, activations
quantized on the fly) is the fallback only where static fails, and the returned record says which was used.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process

from litstarter.extras.deploy.contract import EMBEDDED_KEY, ModelContract


class CalibrationReader(CalibrationDataReader):
    """Feeds calibration images to ORT's quantizer in batches.

    Args:
        images: ``(N, C, H, W)`` uint8 train images in the eval view.
        input_name: The graph input's name.
        batch_size: Images per calibration batch.
    """

    def __init__(self, images: np.ndarray, input_name: str, batch_size: int = 32) -> None:
        self._batches = iter([{input_name: images[i : i + batch_size]} for i in range(0, len(images), batch_size)])

    def get_next(self) -> dict | None:
        """The next batch, or ``None`` when done."""
        return next(self._batches, None)


def quantize_int8(fp32_path: Path, out_path: Path, calibration: np.ndarray, contract: ModelContract) -> dict:
    """INT8 ONNX: static QDQ, per channel, calibrated on ``calibration``; dynamic only if static fails.

    Args:
        fp32_path: The verified fp32 ONNX model.
        out_path: Where to write the INT8 model (with the contract embedded again).
        calibration: ``(N, C, H, W)`` uint8 training images in the eval view.
        contract: The model's contract (input name; embedded in the output).

    Returns:
        ``{"format": "onnx", "quantization": record}``: the record says which mode was used (and, for the
        dynamic fallback, why static failed).
    """
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "fp32.onnx"
        prepared = Path(tmp) / "prepared.onnx"
        quantized = Path(tmp) / "int8.onnx"
        model = onnx.load(str(fp32_path))
        del model.metadata_props[:]  # re-added after quantization
        onnx.save(model, str(source))
        quiet = logging.getLogger().level
        logging.getLogger().setLevel(logging.ERROR)  # the quantizer logs its shape-inference advice as warnings
        try:
            try:
                quant_pre_process(str(source), str(prepared))  # shape inference + graph optimisation, as ORT advises
                pre_processed = True
            except Exception:  # optional: quantization works on the raw graph too
                prepared, pre_processed = source, False
            record: dict = {"calibration_images": int(len(calibration)), "per_channel": True}
            try:
                quantize_static(
                    str(prepared),
                    str(quantized),
                    CalibrationReader(calibration, contract.input_name),
                    quant_format=QuantFormat.QDQ,
                    per_channel=True,
                    activation_type=QuantType.QUInt8,  # u8 activations x s8 weights: the fast path on x86 (VNNI)
                    weight_type=QuantType.QInt8,
                    # 7-bit weights: x86 without VNNI (AVX2, AVX-512 alone) multiplies u8 x s8 with VPMADDUBSW, whose
                    # 16-bit sums saturate; the artifact may run on such a CPU, wherever it was exported.
                    reduce_range=True,
                )
                record.update(
                    mode="static_qdq",
                    activations="uint8",
                    weights="int8",
                    calibration_method="minmax",
                    reduce_range=True,
                    pre_processed=pre_processed,
                )
            except Exception as err:
                quantize_dynamic(str(prepared), str(quantized), per_channel=True, weight_type=QuantType.QInt8)
                record = {
                    "mode": "dynamic",
                    "per_channel": True,
                    "weights": "int8",
                    "why_not_static": f"{type(err).__name__}: {err}",
                }
        finally:
            logging.getLogger().setLevel(quiet)
        model = onnx.load(str(quantized))
        entry = model.metadata_props.add()
        entry.key, entry.value = EMBEDDED_KEY, contract.to_json()
        onnx.save(model, str(out_path))
    return {"format": "onnx", "quantization": record}
