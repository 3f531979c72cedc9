"""litstarter serve's Open Inference Protocol routes, probes and metrics, against real server processes on loopback.

``tritonclient`` is the client, with its default binary tensors and again with JSON ones. One server
(model.onnx, max_batch_size 8) takes the protocol checks, in any order; each check of a loading server
(``--workers 2``, its loading held until the test creates a file, ``--drain_seconds 4``) starts one of its own: it
is probed while it loads, counts its metrics under two model threads, or is drained (and stops).
"""

from __future__ import annotations

import base64
import csv
import json
import random
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest

from litstarter.extras.deploy import infer
from tests.extras.serve.test_serve import start_server
from tests.extras.serve.waiting import status_of, wait_until

pytestmark = pytest.mark.slow
triton_http = pytest.importorskip("tritonclient.http")
parser = pytest.importorskip("prometheus_client.parser")

MAX_BYTES = 65_536
LOADING = re.compile(r"^litstarter serve: loading the model; probes answer at (http://127\.0\.0\.1:\d+)/")
INFER = "/v2/models/model/infer"
DRAIN_SECONDS = 4  # long enough for the checks made while draining, on a loaded machine


@pytest.fixture(scope="module")
def protocol_server(digits_export):
    server = start_server(digits_export.out / "model.onnx", "--max_batch_size", "8", "--max_bytes", str(MAX_BYTES))
    yield server
    if server.proc.poll() is None:
        server.proc.kill()


@pytest.fixture
def loading_server(digits_export, tmp_path):
    """Two model workers; loading waits for ``server.release`` to exist; after SIGTERM it serves 4 s more.
    Returned while it loads."""
    model = digits_export.out / "model.onnx"
    args = ["--workers", "2", "--max_batch_size", "8", "--drain_seconds", str(DRAIN_SECONDS)]
    release = tmp_path / "release-the-load"
    server = start_server(model, *args, env={"LITSTARTER_TEST_HOLD_LOAD": str(release)}, ready_line=LOADING)
    server.release = release
    yield server
    if server.proc.poll() is None:
        server.proc.kill()


def loaded(server):
    """``server`` once its held load is let go and its readiness probe answers 200."""
    server.release.touch()
    wait_until(lambda: status_of(f"{server.url}/v2/health/ready") == 200, 60, f"ready\n{server.output()}")
    return server


@pytest.fixture(scope="module")
def infer_probabilities(digits_export, digit_files, tmp_path_factory) -> dict[str, np.ndarray]:
    """``litstarter infer --topk 10`` on the first 16 digit files: every class's probability, by file name."""
    _, files, _ = digit_files
    folder = tmp_path_factory.mktemp("protocol_infer")
    for path in files[:16]:
        (folder / path.name).write_bytes(path.read_bytes())
    output = folder.parent / f"{folder.name}.csv"
    model = digits_export.out / "model.onnx"
    assert infer.main(["--model", str(model), "--input", str(folder), "--output", str(output), "--topk", "10"]) == 0
    rows = {}
    with open(output, newline="") as f:
        for row in csv.DictReader(f):
            p = np.zeros(10)
            for i in range(1, 11):
                p[int(row[f"top{i}"])] = float(row[f"top{i}_prob"])
            rows[Path(row["file"]).name] = p
    return rows


def client_for(server) -> triton_http.InferenceServerClient:
    return triton_http.InferenceServerClient(
        server.url.removeprefix("http://"), connection_timeout=30, network_timeout=30
    )


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_tritonclient_probes_metadata_tensors_and_classification(
    protocol_server, digits_export, digit_files, infer_probabilities, binary
):
    _, files, arrays = digit_files
    contract = json.loads((digits_export.out / "model.json").read_text())
    client = client_for(protocol_server)
    assert client.is_server_live() and client.is_server_ready() and client.is_model_ready("model")
    assert set(client.get_server_metadata()["extensions"]) >= {"binary_tensor_data", "classification"}
    meta = client.get_model_metadata("model")
    shapes = {t["name"]: (t["datatype"], t["shape"]) for t in meta["inputs"] + meta["outputs"]}
    assert shapes["input"] == ("UINT8", [-1, *contract["input"]["shape"][1:]])
    assert shapes["probabilities"] == shapes["logits"] == ("FP32", [-1, contract["num_classes"]])

    batch = np.ascontiguousarray(arrays[:8])  # (8, 1, 8, 8) uint8, the pixels of the first 8 files
    tensor = triton_http.InferInput("input", list(batch.shape), "UINT8")
    tensor.set_data_from_numpy(batch, binary_data=binary)
    wanted = [
        triton_http.InferRequestedOutput("probabilities", binary_data=binary),
        triton_http.InferRequestedOutput("logits", binary_data=binary, class_count=3),
    ]
    result = client.infer("model", [tensor], outputs=wanted)
    probabilities = result.as_numpy("probabilities")
    assert probabilities.dtype == np.float32 and probabilities.shape == (8, 10)
    for path, row in zip(files[:8], probabilities, strict=True):
        np.testing.assert_allclose(row, infer_probabilities[path.name], atol=1e-5)

    classified = client.infer(
        "model",
        [tensor],
        outputs=[triton_http.InferRequestedOutput("probabilities", binary_data=binary, class_count=3)],
    ).as_numpy("probabilities")
    assert classified.shape == (8, 3)
    with httpx.Client(base_url=protocol_server.url, timeout=30) as http:
        for path, row in zip(files[:8], classified, strict=True):
            top = http.post("/predict", content=path.read_bytes(), headers={"Content-Type": "image/png"})
            expected = top.json()["predictions"][:3]
            got = [parts.split(":") for parts in as_text(row)]
            assert [(int(i), label) for _, i, label in got] == [(p["index"], p["class"]) for p in expected]
            assert [float(v) for v, _, _ in got] == pytest.approx([p["prob"] for p in expected], abs=1e-6)
    # The classification of the logits ranks the classes as that of the probabilities does.
    ranks = [[e.split(":")[1] for e in as_text(row)] for row in result.as_numpy("logits")]
    assert ranks == [[e.split(":")[1] for e in as_text(row)] for row in classified]


def as_text(row) -> list[str]:
    """A row of a BYTES output as text (tritonclient gives bytes for binary outputs, str for JSON ones)."""
    return [e if isinstance(e, str) else e.decode() for e in row]


def test_bytes_input_answers_what_predict_answers(protocol_server, image_files_for_protocol):
    files = image_files_for_protocol
    client = client_for(protocol_server)
    encoded = np.array([path.read_bytes() for path in files], dtype=object)
    tensor = triton_http.InferInput("image_bytes", [len(files)], "BYTES")
    tensor.set_data_from_numpy(encoded)
    binary = client.infer("model", [tensor], outputs=[triton_http.InferRequestedOutput("probabilities")])
    as_json = {
        "inputs": [
            {
                "name": "image_bytes",
                "datatype": "BYTES",
                "shape": [len(files)],
                "data": [base64.b64encode(path.read_bytes()).decode() for path in files],
            }
        ]
    }
    with httpx.Client(base_url=protocol_server.url, timeout=30) as http:
        answer = http.post(INFER, json=as_json)
        assert answer.status_code == 200, answer.text
        outputs = {o["name"]: o for o in answer.json()["outputs"]}
        from_json = np.array(outputs["probabilities"]["data"]).reshape(outputs["probabilities"]["shape"])
        for i, path in enumerate(files):
            kind = "image/jpeg" if path.suffix == ".jpg" else "image/png"
            top = http.post("/predict", content=path.read_bytes(), headers={"Content-Type": kind}).json()
            for p in top["predictions"]:
                assert binary.as_numpy("probabilities")[i, p["index"]] == pytest.approx(p["prob"], abs=1e-6)
                assert from_json[i, p["index"]] == pytest.approx(p["prob"], abs=1e-6)


@pytest.fixture(scope="module")
def image_files_for_protocol(digit_files, tmp_path_factory) -> list[Path]:
    """Two digit PNGs and a larger RGB JPEG of one of them: files as a user has them."""
    from PIL import Image

    _, files, arrays = digit_files
    jpeg = tmp_path_factory.mktemp("protocol_files") / "big.jpg"
    Image.fromarray(arrays[2][0]).convert("RGB").resize((40, 32), Image.Resampling.NEAREST).save(jpeg, quality=95)
    return [files[0], files[1], jpeg]


def binary_request(batch: np.ndarray, size: int | None = None) -> tuple[bytes, dict]:
    """A binary-tensor request for a UINT8 batch; ``size`` overrides the declared binary_data_size."""
    raw = batch.tobytes()
    head = json.dumps(
        {
            "inputs": [
                {
                    "name": "input",
                    "datatype": "UINT8",
                    "shape": list(batch.shape),
                    "parameters": {"binary_data_size": size or len(raw)},
                }
            ],
            "outputs": [{"name": "probabilities", "parameters": {"binary_data": True}}],
        }
    ).encode()
    return head + raw, {"Inference-Header-Content-Length": str(len(head))}


def bad_protocol_requests(image: np.ndarray) -> list[tuple[str, str, dict, int]]:
    """(name, path, httpx.post keyword arguments, expected status) for each kind of bad protocol request."""
    pixels = image.reshape(-1).tolist()
    tensor = {"name": "input", "datatype": "UINT8", "shape": [1, 1, 8, 8], "data": pixels}
    cut, cut_headers = binary_request(image[None], size=63)
    return [
        ("wrong datatype", INFER, {"json": {"inputs": [{**tensor, "datatype": "FP32"}]}}, 400),
        ("wrong shape", INFER, {"json": {"inputs": [{**tensor, "shape": [1, 1, 9, 9], "data": [0] * 81}]}}, 400),
        ("data not matching its shape", INFER, {"json": {"inputs": [{**tensor, "data": pixels[:10]}]}}, 400),
        ("byte count not matching the shape", INFER, {"content": cut, "headers": cut_headers}, 400),
        ("values out of UINT8", INFER, {"json": {"inputs": [{**tensor, "data": [300] * 64}]}}, 400),
        ("unknown model", "/v2/models/nope/infer", {"json": {"inputs": [tensor]}}, 404),
        ("unknown version", "/v2/models/model/versions/7/infer", {"json": {"inputs": [tensor]}}, 404),
        ("non-JSON", INFER, {"content": b"this is not JSON", "headers": {"Content-Type": "application/json"}}, 400),
        ("unknown output", INFER, {"json": {"inputs": [tensor], "outputs": [{"name": "scores"}]}}, 400),
        ("wrong content type", INFER, {"content": b"{}", "headers": {"Content-Type": "image/png"}}, 415),
        ("too many bytes", INFER, {"content": b"{" + bytes(MAX_BYTES), "headers": {}}, 413),
    ]


def test_bad_protocol_requests_fail_alone(protocol_server, digit_files, infer_probabilities):
    _, files, arrays = digit_files
    bad = bad_protocol_requests(arrays[0])
    jobs = [("good", i) for i in range(16)] + [("bad", b) for b in bad]
    random.Random(0).shuffle(jobs)
    with httpx.Client(base_url=protocol_server.url, timeout=30) as client:

        def send(job):
            kind, what = job
            if kind == "bad":
                return client.post(what[1], **what[2])
            if what % 2:  # JSON and binary tensors in turn
                tensor = {
                    "name": "input",
                    "datatype": "UINT8",
                    "shape": [1, 1, 8, 8],
                    "data": arrays[what].reshape(-1).tolist(),
                }
                return client.post(INFER, json={"inputs": [tensor], "outputs": [{"name": "probabilities"}]})
            content, headers = binary_request(arrays[what][None])
            return client.post(INFER, content=content, headers=headers)

        with ThreadPoolExecutor(len(jobs)) as pool:
            responses = list(pool.map(send, jobs))
    for (kind, what), response in zip(jobs, responses, strict=True):
        if kind == "bad":
            name, _, _, status = what
            assert response.status_code == status, (name, response.text)
            message = response.json()["error"]
            assert message and "\n" not in message, (name, message)
            continue
        assert response.status_code == 200, response.text
        if "inference-header-content-length" in response.headers:
            length = int(response.headers["inference-header-content-length"])
            row = np.frombuffer(response.content[length:], "<f4")
        else:
            row = np.array(response.json()["outputs"][0]["data"])
        np.testing.assert_allclose(row, infer_probabilities[files[what].name], atol=1e-5)


def metrics_of(server) -> dict[tuple[str, tuple], float]:
    """Every sample of ``/metrics``: (name, sorted labels) -> value."""
    text = httpx.get(f"{server.url}/metrics", timeout=30).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in parser.text_string_to_metric_families(text)
        for s in family.samples
    }


def count_requests(server, arrays: np.ndarray, n: int) -> None:
    """Send ``n`` one-image protocol requests, 8 at a time; the request counter and the batch sizes count them all."""
    before = metrics_of(server)
    with httpx.Client(base_url=server.url, timeout=30) as client, ThreadPoolExecutor(8) as pool:

        def one(i: int) -> int:
            content, headers = binary_request(arrays[i % len(arrays)][None])
            return client.post(INFER, content=content, headers=headers).status_code

        assert list(pool.map(one, range(n))) == [200] * n
    after = metrics_of(server)

    def grew(name: str, **labels) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    route = "/v2/models/{name}/infer"
    assert grew("litstarter_requests_total", route=route, status="200") == n
    assert grew("litstarter_request_duration_seconds_count", route=route) == n
    assert grew("litstarter_batch_size_sum") == n  # one image per request: every image in exactly one batch
    batches = grew("litstarter_batch_size_count")
    assert 1 <= batches <= n and grew("litstarter_inference_seconds_count") == batches
    assert after[("litstarter_queue_depth", ())] == 0 and after[("litstarter_ready", ())] == 1
    print(f"{n} requests: {batches:.0f} batches")


def test_metrics_count_every_request(protocol_server, digit_files):
    count_requests(protocol_server, digit_files[2], 40)


def test_not_ready_while_loading(loading_server):
    url = loading_server.url
    client = client_for(loading_server)
    assert httpx.get(f"{url}/v2/health/live", timeout=5).status_code == 200
    assert client.is_server_live() and not client.is_server_ready()
    for path in ("/v2/health/ready", "/v2/models/model/ready", "/health"):
        assert httpx.get(f"{url}{path}", timeout=5).status_code == 503, path
    tensor = {"name": "input", "datatype": "UINT8", "shape": [1, 1, 8, 8], "data": [0] * 64}
    early = httpx.post(f"{url}{INFER}", json={"inputs": [tensor]}, timeout=5)
    assert early.status_code == 503 and "loading" in early.json()["error"]
    loaded(loading_server)
    assert client.is_server_ready() and client.is_model_ready("model")
    assert any(" on http://" in line for line in loading_server.lines)


def test_metrics_count_every_request_with_two_workers(loading_server, digit_files):
    count_requests(loaded(loading_server), digit_files[2], 40)


def test_draining_is_not_ready_but_live_until_exit(loading_server, digit_files):
    url = loaded(loading_server).url
    loading_server.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: status_of(f"{url}/v2/health/ready") == 503, 5, "readiness 503 after SIGTERM")
    ready = httpx.get(f"{url}/v2/health/ready", timeout=5)
    assert ready.status_code == 503 and ready.json() == {"ready": False}
    assert httpx.get(f"{url}/health", timeout=5).status_code == 503
    content, headers = binary_request(digit_files[2][0][None])
    assert httpx.post(f"{url}{INFER}", content=content, headers=headers, timeout=5).status_code == 200
    live = []
    while loading_server.proc.poll() is None:
        try:
            live.append(httpx.get(f"{url}/v2/health/live", timeout=5).status_code)
        except httpx.TransportError:
            break  # the listener closed: the process is on its way out
        time.sleep(0.05)
    assert live and set(live) == {200}
    assert loading_server.proc.wait(60) == 0, loading_server.output()
    assert "heavy modules imported: []" in loading_server.output()
