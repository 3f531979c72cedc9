"""litstarter serve, the fast parts: request checks, infer's preprocessing on bytes, the batcher, the options.

The server itself, over real HTTP, is tested in tests/e2e/test_serve.py.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from PIL import Image

from litstarter.__main__ import main
from litstarter.extras.deploy.contract import ModelContract
from litstarter.extras.serve.app import verification
from litstarter.extras.serve.batcher import DynamicBatcher
from litstarter.extras.serve.request import RequestError, check_content_type, decode_image, image_bytes

CONTRACT = ModelContract(
    class_names=["a", "b", "c"], channels=3, image_size=(16, 16), resize_size=(18, 18), mean=[0.5] * 3, std=[0.25] * 3
)


def encoded(image: Image.Image, fmt: str = "PNG", **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **kwargs)
    return buffer.getvalue()


def refused(func, *args) -> tuple[int, str]:
    with pytest.raises(RequestError) as caught:
        func(*args)
    assert "\n" not in caught.value.message
    return caught.value.status, caught.value.message


def test_content_types():
    assert check_content_type("image/PNG; charset=binary") == "image/png"
    assert check_content_type("application/json") == "application/json"
    for bad in (None, "", "text/plain", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded"):
        status, message = refused(check_content_type, bad)
        assert status == 415 and "image/*" in message and "application/json" in message


def test_bodies_json_and_base64():
    png = encoded(Image.new("RGB", (5, 5)))
    assert image_bytes("image/png", png) == png
    assert image_bytes("application/json", json.dumps({"image": base64.b64encode(png).decode()}).encode()) == png
    data_url = "data:image/png;base64," + base64.b64encode(png).decode()
    assert image_bytes("application/json", json.dumps({"image": data_url}).encode()) == png
    mime = base64.encodebytes(png * 4).decode()  # what the base64 command writes: lines of 76 characters
    assert "\n" in mime.strip() and image_bytes("application/json", json.dumps({"image": mime}).encode()) == png * 4
    spaced = " \t".join(base64.b64encode(png).decode()) + "\r\n"
    assert image_bytes("application/json", json.dumps({"image": spaced}).encode()) == png
    raw = b'{"image": "' + base64.encodebytes(png * 4).strip() + b'"}'  # unescaped line breaks: curl -d "$(base64 ...)"
    assert b"\n" in raw and image_bytes("application/json", raw) == png * 4
    cases = {
        b"": "empty",
        b"{not json": "not valid JSON",
        b"[" * 150_000: "nested too deeply",
        b'{"image": ' + b"9" * 5001 + b"}": f"a number of over {sys.get_int_max_str_digits()} digits",
        json.dumps({"image": "iVBOR\u00a0w0KGgo="}).encode(): "not valid base64",  # non-ASCII space
        b'{"image": "iVBOR-w0KGgo="}': "not valid base64",
        b'["image"]': 'no "image" string',
        b'{"image": 3}': 'no "image" string',
        b'{"image": "%%% not base64"}': "not valid base64",
        b'{"image": ""}': "empty",
    }
    for body, words in cases.items():
        status, message = refused(image_bytes, "application/json", body)
        assert status == 400 and words in message, (body, message)
    assert refused(image_bytes, "image/png", b"")[0] == 400


def test_bad_image_bytes_are_400_and_bombs_413():
    jpeg = encoded(Image.new("RGB", (64, 48), (10, 200, 30)), "JPEG")
    for data in (b"plain text", jpeg[: len(jpeg) // 2], b"\x89PNG\r\n\x1a\n" + b"\0" * 40):
        status, message = refused(decode_image, data, CONTRACT, 10_000)
        assert status == 400 and message.startswith("the "), message
    bomb = encoded(Image.new("L", (3000, 2000)))  # 6 MP in a few kB
    status, message = refused(decode_image, bomb, CONTRACT, 5_000_000)
    assert status == 413 and "3000x2000" in message and "--max_pixels" in message


@pytest.mark.parametrize("kind", ["grey png", "rgba png", "odd rgb jpeg", "16-bit png", "palette gif", "exif rotated"])
def test_bytes_preprocess_exactly_as_infer_reads_files(kind, tmp_path):
    rng = np.random.default_rng(1)
    rgb = Image.fromarray(rng.integers(0, 255, (37, 23, 3), dtype=np.uint8))
    image, fmt, extra = {
        "grey png": (rgb.convert("L"), "PNG", {}),
        "rgba png": (rgb.convert("RGBA"), "PNG", {}),
        "odd rgb jpeg": (rgb, "JPEG", {"quality": 80}),
        "16-bit png": (Image.fromarray(rng.integers(0, 65535, (20, 30), dtype=np.uint16)), "PNG", {}),
        "palette gif": (rgb.convert("P"), "GIF", {}),
        "exif rotated": (rgb, "JPEG", {"exif": _rotated_exif()}),
    }[kind]
    path = tmp_path / f"image.{fmt.lower()}"
    path.write_bytes(encoded(image, fmt, **extra))
    served = decode_image(path.read_bytes(), CONTRACT, 10_000)
    assert served.dtype == np.uint8 and served.shape == (3, 16, 16)
    np.testing.assert_array_equal(served, CONTRACT.load_image(path))  # what infer feeds the model for this file


def _rotated_exif() -> Image.Exif:
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90 degrees
    return exif


def top_predictions(logits: np.ndarray, names, k: int) -> list[list[dict]]:
    """``/predict``'s ``predictions`` for each row of ``logits``: the single-label task's answers."""
    answers = ModelContract(**{**CONTRACT.__dict__, "class_names": list(names)}).answers()
    return [answers.json_answer(p, k)["predictions"] for p in answers.outputs(logits)]


def test_top_predictions_are_infer_order():
    logits = np.array([[0.0, 2.0, 2.0], [5.0, -1.0, 1.0]], np.float32)
    rows = top_predictions(logits, ["a", "b", "c"], 2)
    assert [[p["class"] for p in row] for row in rows] == [["b", "c"], ["a", "c"]]  # ties: the lower index first
    assert rows[0][0]["prob"] == pytest.approx(rows[0][1]["prob"]) and rows[1][0]["index"] == 0
    assert sum(p["prob"] for p in top_predictions(logits, "abc", 3)[1]) == pytest.approx(1.0)


def test_verification_line(tmp_path):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"")
    assert verification(model)["line"] == "not verified: no export_report.json beside model.onnx"
    figures = {"passed": True, "max_abs_diff": 2e-6, "top1_agreement": 1.0, "accuracy": 0.97}
    verified = {"samples": 270, "split": "test", "agreement": "top1_agreement", "score": "accuracy"}
    report = {"artifacts": {"model.onnx": figures}, "verification": verified}
    (tmp_path / "export_report.json").write_text(json.dumps({**report, "eager": {"accuracy": 0.97}}))
    line = verification(model)["line"]
    assert line == (
        "model.onnx: passed against eager on 270 test images: max |diff| 2.00e-06, top-1 agreement 100.00%, "
        "accuracy 0.9700 (eager 0.9700)"
    )


class Recorder:
    """A batch function that records the batch sizes it ran, and answers each image with its pixel sum."""

    def __init__(self, seconds: float = 0.0, fail_on: int | None = None, hold: bool = False) -> None:
        self.sizes: list[int] = []
        self.seconds = seconds
        self.fail_on = fail_on
        self.hold = hold
        self.entered = threading.Event()  # set when a call starts
        self.release = threading.Event()  # with hold: the call waits for it (set by the test)

    def __call__(self, images: np.ndarray) -> list[int]:
        self.entered.set()
        if self.hold:
            assert self.release.wait(10), "the test never released the model"
        time.sleep(self.seconds)
        sums = [int(image.sum()) for image in images]
        if self.fail_on in sums:
            raise RuntimeError("poisoned batch")
        self.sizes.append(len(images))
        return sums


def images(n: int) -> list[np.ndarray]:
    return [np.full((1, 2, 2), i, np.uint8) for i in range(n)]


def run_batcher(batcher: DynamicBatcher, coroutine):
    async def go():
        await batcher.start()
        try:
            return await coroutine()
        finally:
            await batcher.stop()

    return asyncio.run(go())


def test_batches_hold_what_is_queued_up_to_max_batch_size():
    model = Recorder(seconds=0.02)
    batcher = DynamicBatcher([model], max_batch_size=4)
    results = run_batcher(batcher, lambda: asyncio.gather(*(batcher.submit(x) for x in images(10))))
    assert results == [4 * i for i in range(10)]  # every request gets its own image's answer
    assert sum(model.sizes) == 10 and max(model.sizes) == 4
    assert sum(n for size, n in batcher.batch_sizes.items()) == len(model.sizes)


def test_batch_timeout_waits_for_more_and_zero_does_not():
    async def staggered(batcher):
        async def later(x, delay):
            await asyncio.sleep(delay)
            return await batcher.submit(x)

        return await asyncio.gather(*(later(x, 0.03 * i) for i, x in enumerate(images(3))))

    waiting = Recorder()
    batcher = DynamicBatcher([waiting], max_batch_size=8, batch_timeout=0.5)
    started = time.monotonic()
    run_batcher(batcher, lambda: staggered(batcher))
    assert waiting.sizes == [3] and time.monotonic() - started >= 0.5  # one batch, after the timeout
    eager = Recorder()
    batcher = DynamicBatcher([eager], max_batch_size=8, batch_timeout=0.0)
    started = time.monotonic()
    run_batcher(batcher, lambda: staggered(batcher))
    assert eager.sizes == [1, 1, 1] and time.monotonic() - started < 0.4  # a lone request never waits


def test_a_failing_batch_fails_only_its_requests_and_given_up_requests_are_dropped():
    model = Recorder(fail_on=4 * 7, hold=True)
    batcher = DynamicBatcher([model], max_batch_size=2)

    async def scenario():
        first = asyncio.ensure_future(batcher.submit(images(8)[7]))  # runs alone: the worker was idle
        assert await asyncio.to_thread(model.entered.wait, 10), "the first request never reached the model"
        gave_up = asyncio.ensure_future(asyncio.wait_for(batcher.submit(images(8)[5]), 0.01))
        ok = asyncio.ensure_future(batcher.submit(images(8)[3]))
        await asyncio.wait([gave_up])  # it gave up while queued behind the held first batch
        model.release.set()
        return await asyncio.gather(first, gave_up, ok, return_exceptions=True)

    first, gave_up, ok = run_batcher(batcher, scenario)
    assert isinstance(first, RuntimeError) and isinstance(gave_up, asyncio.TimeoutError) and ok == 12
    assert model.sizes == [1]  # the request that gave up while queued was never computed


def test_usage_errors_are_one_line(tmp_path, capsys):
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"not a model")
    cases = [
        (["--model", str(tmp_path / "nope.onnx")], 2, "--model not found"),
        (["--model", str(onnx), "--max_batch_size", "0"], 2, "--max_batch_size must be >= 1, got 0"),
        (["--model", str(onnx), "--batch_timeout", "40"], 2, "--batch_timeout must be >= 0 and below"),
        (["--model", str(onnx), "--drain_seconds", "-1"], 2, "--drain_seconds must be >= 0, got -1"),
        (["--model", str(onnx), "--model_name", "my model"], 2, "--model_name must be letters, digits"),
        (["--model", str(onnx), "--port", "0"], 1, f"cannot load {onnx} as an ONNX model"),
        (["--model", str(tmp_path / "weights.bin"), "--port", "0"], 2, "--model not found"),
    ]
    for argv, code, words in cases:
        assert main(["serve", *argv]) == code, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("litstarter serve: error: ") and words in err and "\n" not in err, err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert main(["serve", "--model", str(onnx), "--port", str(busy.getsockname()[1])]) == 2
        assert "cannot listen on 127.0.0.1:" in capsys.readouterr().err


def test_the_server_modules_import_no_torch():
    modules = ["command", "app", "request", "options", "batcher", "service", "v2", "tensors", "metrics", "shutdown"]
    script = "import sys\n" + "".join(f"import litstarter.extras.serve.{m}\n" for m in modules)
    script += "print(sorted(m for m in ('torch', 'torchvision', 'lightning') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_a_descriptor_limit_too_low_for_the_cap_is_one_line(tmp_path):
    from litstarter.extras.serve.command import DESCRIPTOR_RESERVE

    model = tmp_path / "model.onnx"
    model.write_bytes(b"")  # refused before it is loaded
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))\n"
        "from litstarter.__main__ import main\n"
        f"sys.exit(main(['serve', '--model', {str(model)!r}, '--max_connections', '1000']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    line = proc.stderr.strip()
    assert proc.returncode == 2 and "\n" not in line, proc.stderr
    assert line.startswith(f"litstarter serve: error: --max_connections 1000 needs {1000 + DESCRIPTOR_RESERVE} open")
    assert "at most 256 (ulimit -Hn)" in line
