"""litstarter serve, end to end: a real server process on a free loopback port, real HTTP requests (httpx).

One server (model.onnx, max_batch_size 8) takes the checks in any order: the same answers as ``infer``, batches
forming, bad requests failing alone, 1,000 bad requests. SIGTERM during a burst stops a server of its own, and
another, with a short deadline, shows the 504. Each is checked to be torch-free.
"""

from __future__ import annotations

import base64
import io
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from litstarter.extras.deploy import infer
from tests.extras.serve.waiting import refuses_connections, wait_until
from tests.helpers import REPO

pytestmark = pytest.mark.slow

MAX_BYTES = 65_536
MAX_PIXELS = 1_000_000
READY = re.compile(r"^litstarter serve: .* on (http://127\.0\.0\.1:\d+) ")


@dataclass
class Server:
    """A ``litstarter serve`` process and the lines it has printed so far."""

    proc: subprocess.Popen
    url: str = ""
    lines: list[str] = field(default_factory=list)

    def output(self) -> str:
        return "\n".join(self.lines)

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM and wait for the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)


def start_server(
    model: Path, *args: str, slow_white: float = 0.0, timeout: float = 120, env: dict | None = None, ready_line=READY
) -> Server:
    """Start ``python -m tests.extras.serve.serve_process --model MODEL --port 0 ARGS`` and wait for its ready line
    (or the first line ``ready_line`` matches: its group 1 is the URL)."""
    env = {**(env or {}), **({"LITSTARTER_TEST_SLOW_WHITE": str(slow_white)} if slow_white else {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.extras.serve.serve_process", "--model", str(model), "--port", "0", *args],
        cwd=REPO,
        env={**__import__("os").environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    server = Server(proc)
    ready = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            server.lines.append(line.rstrip("\n"))
            match = ready_line.match(line)
            if match:
                server.url = match.group(1)
                ready.set()
        ready.set()  # the process ended

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(timeout) or not server.url:
        proc.kill()
        raise AssertionError(f"the server did not start:\n{server.output()}")
    return server


def tree_rss(pid: int) -> int:
    """Resident memory in bytes of ``pid`` and all its descendants (Linux /proc)."""
    pids, total = [pid], 0
    for p in pids:
        for children in Path(f"/proc/{p}/task").glob("*/children"):
            pids += [int(c) for c in children.read_text().split()]
        status = Path(f"/proc/{p}/status").read_text()
        total += int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1)) * 1024
    return total


def png(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def image_files(tmp_path_factory) -> list[Path]:
    """20 files as a user has them: grey PNG digits, larger RGB JPEGs of odd sizes, RGBA PNGs."""
    from litstarter.data import DigitsDataModule

    folder = tmp_path_factory.mktemp("serve_images")
    digits = DigitsDataModule().splits()["test"][0][:20]  # (N, 1, 8, 8) uint8
    files = []
    for i, digit in enumerate(digits):
        image = Image.fromarray(digit[0])
        if i % 4 == 1:
            path = folder / f"{i:02d}.jpg"
            image.convert("RGB").resize((8 * 3 + i, 8 * 3), Image.Resampling.NEAREST).save(path, quality=95)
        elif i % 4 == 3:
            path = folder / f"{i:02d}.png"
            image.convert("RGBA").save(path)
        else:
            path = folder / f"{i:02d}.png"
            image.save(path)
        files.append(path)
    return files


@pytest.fixture(scope="module")
def infer_rows(digits_export, image_files, tmp_path_factory) -> dict[str, dict]:
    """``litstarter infer``'s CSV rows for the same files, by file name."""
    output = tmp_path_factory.mktemp("serve_infer") / "preds.csv"
    model = digits_export.out / "model.onnx"
    assert infer.main(["--model", str(model), "--input", str(image_files[0].parent), "--output", str(output)]) == 0
    import csv

    with open(output, newline="") as f:
        return {Path(row["file"]).name: row for row in csv.DictReader(f)}


def main_server(digits_export):
    """The main server: max_batch_size 8, small limits, all-white images 0.5 s slow (for the SIGTERM check)."""
    args = ["--max_batch_size", "8", "--max_bytes", str(MAX_BYTES), "--max_pixels", str(MAX_PIXELS)]
    server = start_server(digits_export.out / "model.onnx", *args, slow_white=0.5)
    yield server
    if server.proc.poll() is None:
        server.proc.kill()


#: Shared by the checks that leave it serving; the SIGTERM check stops one of its own.
server = pytest.fixture(main_server, scope="module", name="server")
stopped_server = pytest.fixture(main_server, name="stopped_server")


def post_file(client: httpx.Client, path: Path, as_json: bool) -> httpx.Response:
    data = path.read_bytes()
    if as_json:
        return client.post("/predict", json={"image": base64.b64encode(data).decode()})
    kind = "image/jpeg" if path.suffix == ".jpg" else "image/png"
    return client.post("/predict", content=data, headers={"Content-Type": kind})


def bad_requests() -> list[tuple[str, dict, int]]:
    """One request of each bad kind: (name, httpx.post keyword arguments, expected status)."""
    rgb = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    jpeg = io.BytesIO()
    Image.fromarray(rgb).save(jpeg, format="JPEG", quality=90)
    jpeg = jpeg.getvalue()
    bomb = png(np.zeros((2000, 1000), np.uint8))  # 2 MP in a few kB: over MAX_PIXELS, under MAX_BYTES
    assert len(bomb) < MAX_BYTES
    as_png = {"Content-Type": "image/png"}
    return [
        ("non-image bytes", {"content": b"plain text, not an image " * 8, "headers": as_png}, 400),
        ("truncated JPEG", {"content": jpeg[: len(jpeg) // 2], "headers": {"Content-Type": "image/jpeg"}}, 400),
        ("empty body", {"content": b"", "headers": as_png}, 400),
        ("wrong content type", {"content": png(rgb), "headers": {"Content-Type": "text/plain"}}, 415),
        ("invalid base64", {"json": {"image": "this is *not* base64"}}, 400),
        ("too many pixels", {"content": bomb, "headers": as_png}, 413),
        ("too many bytes", {"content": b"\x89PNG" + bytes(MAX_BYTES), "headers": as_png}, 413),
    ]


def assert_same_as_infer(response: httpx.Response, row: dict) -> None:
    assert response.status_code == 200, response.text
    predictions = response.json()["predictions"]
    assert len(predictions) == 5
    assert [p["prob"] for p in predictions] == sorted((p["prob"] for p in predictions), reverse=True)
    assert predictions[0]["class"] == row["pred"] == str(predictions[0]["index"])
    for i, p in enumerate(predictions[:3], start=1):
        assert p["class"] == row[f"top{i}"]
        assert abs(p["prob"] - float(row[f"top{i}_prob"])) <= 1e-5


def stats(client: httpx.Client) -> dict:
    return client.get("/stats").json()


def test_serves_what_infer_predicts(server, image_files, infer_rows, digits_export):
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("/health").json() == {"status": "ok", "model": "model.onnx"}
        info = client.get("/info").json()
        assert info["model"]["class_names"] == [str(d) for d in range(10)]
        assert info["model"]["input_size"] == [8, 8] and info["model"]["channels"] == 1
        assert info["model"]["runtime"].startswith("onnxruntime")
        assert info["model"]["verification"]["passed"] is True
        assert info["model"]["verification"]["line"].startswith("model.onnx: passed against eager on ")
        assert info["server"]["max_batch_size"] == 8
        for i, path in enumerate(image_files):  # raw bytes and base64 JSON in turn
            assert_same_as_infer(post_file(client, path, as_json=bool(i % 2)), infer_rows[path.name])
    not_an_image = image_files[0].parent.parent / "notes.txt"
    not_an_image.write_text("not an image")
    for body in ([], ["--json"]):  # the documented client, with nothing but the standard library
        client = [sys.executable, str(REPO / "examples" / "serve_client.py"), "--url", server.url, *body]
        proc = subprocess.run([*client, str(image_files[1]), str(not_an_image)], capture_output=True, text=True)
        first, second = proc.stdout.splitlines()
        assert proc.returncode == 1 and first.startswith(
            f"{image_files[1]}: {infer_rows[image_files[1].name]['pred']} "
        )
        assert second.startswith(f"{not_an_image}: error 4"), proc.stdout


def test_concurrent_requests_are_batched(server, image_files, infer_rows):
    with httpx.Client(base_url=server.url, timeout=30) as client:
        before = Counter(stats(client)["batches"]["sizes"])
        start = threading.Barrier(16)

        def one(path: Path) -> httpx.Response:
            start.wait(timeout=30)
            return post_file(client, path, as_json=False)

        with ThreadPoolExecutor(16) as pool:
            responses = list(pool.map(one, image_files[:16]))
        for path, response in zip(image_files, responses, strict=False):
            assert_same_as_infer(response, infer_rows[path.name])
        sizes = Counter(stats(client)["batches"]["sizes"])
        sizes.subtract(before)
        ran = {int(size): n for size, n in sizes.items() if n}
        assert sum(size * n for size, n in ran.items()) == 16
        print(f"16 concurrent requests ran as batches {ran} (size: count)")
        assert max(ran) > 1 and max(ran) <= 8, ran


def test_bad_requests_fail_alone(server, image_files, infer_rows):
    bad = bad_requests()
    jobs = [("good", path) for path in image_files[:16] * 2] + [("bad", b) for b in bad]
    random.Random(0).shuffle(jobs)
    with httpx.Client(base_url=server.url, timeout=30) as client:

        def send(job):
            kind, what = job
            return post_file(client, what, as_json=False) if kind == "good" else client.post("/predict", **what[1])

        with ThreadPoolExecutor(len(jobs)) as pool:
            responses = list(pool.map(send, jobs))
    for (kind, what), response in zip(jobs, responses, strict=True):
        if kind == "good":
            assert_same_as_infer(response, infer_rows[what.name])
        else:
            name, _, status = what
            assert response.status_code == status, (name, response.text)
            message = response.json()["error"]
            assert message and "\n" not in message, (name, message)


def test_a_thousand_bad_requests_leave_it_healthy(server, image_files, infer_rows):
    bad = bad_requests()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for name, kwargs, status in bad * 10:  # warm up allocator and thread pool before the baseline
            assert client.post("/predict", **kwargs).status_code == status, name
        baseline = tree_rss(server.proc.pid)
        started = time.monotonic()
        statuses = Counter()
        for i in range(1000):
            name, kwargs, status = bad[i % len(bad)]
            response = client.post("/predict", **kwargs)
            assert response.status_code == status, (name, response.text)
            statuses[status] += 1
            assert time.monotonic() - started < 120, "1,000 bad requests took over 2 minutes"
        grown = tree_rss(server.proc.pid) - baseline
        assert client.get("/health").status_code == 200
        assert_same_as_infer(post_file(client, image_files[0], as_json=True), infer_rows[image_files[0].name])
    print(f"1,000 bad requests: resident memory {baseline / 2**20:.1f} MB -> grew {grown / 2**20:.2f} MB")
    assert grown < 50 * 2**20, f"resident memory grew {grown / 2**20:.1f} MB over 1,000 bad requests"
    assert sum(statuses.values()) == 1000 and not [s for s in statuses if s < 400 or s >= 500]


def test_sigterm_answers_every_accepted_request_and_exits_0(stopped_server):
    server = stopped_server
    white = png(np.full((8, 8), 255, np.uint8))  # each batch holding it takes 0.5 s longer
    client = httpx.Client(base_url=server.url, timeout=60)
    pool = ThreadPoolExecutor(16)
    futures = [
        pool.submit(client.post, "/predict", content=white, headers={"Content-Type": "image/png"}) for _ in range(16)
    ]
    deadline = time.monotonic() + 30
    while stats(client)["requests"]["in_flight"] < 16:  # every one of them is inside the server
        assert time.monotonic() < deadline, "the 16 requests never were in flight together"
        time.sleep(0.01)
    server.proc.send_signal(signal.SIGTERM)
    # draining: no new connections, while the 16 are still answered
    wait_until(lambda: refuses_connections(server.url), 10, "the listener closing after SIGTERM")
    responses = [f.result(timeout=60) for f in futures]
    pool.shutdown()
    client.close()
    assert server.proc.wait(60) == 0, server.output()
    assert [r.status_code for r in responses] == [200] * 16
    assert len({r.text for r in responses}) == 1  # the same image, the same answer
    output = server.output()
    assert "SIGTERM: drained 16 request(s) in flight" in output, output
    assert "heavy modules imported: []" in output, output  # ONNX serving never imported torch or Lightning


def test_a_request_past_its_deadline_gets_504_and_serving_goes_on(digits_export, image_files, infer_rows):
    args = ["--request_timeout", "1", "--workers", "2", "--max_batch_size", "4"]
    server = start_server(digits_export.out / "model.onnx", *args, slow_white=4.0)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            started = time.monotonic()
            white = png(np.full((8, 8), 255, np.uint8))  # its prediction takes 4 s, past the 1 s deadline
            response = client.post("/predict", content=white, headers={"Content-Type": "image/png"})
            assert response.status_code == 504 and "--request_timeout 1 s" in response.json()["error"]
            assert time.monotonic() - started < 3  # answered at the deadline, not when the prediction ended
            assert client.get("/health").status_code == 200
            for path in image_files[:4]:  # the other worker serves while the slow prediction still runs
                assert_same_as_infer(post_file(client, path, as_json=False), infer_rows[path.name])
            assert stats(client)["requests"]["by_status"] == {"200": 4, "504": 1}
            from prometheus_client.parser import text_string_to_metric_families

            samples = {
                (s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(client.get("/metrics").text)
                for s in family.samples
            }
            assert samples[("litstarter_requests_timed_out_total", ())] == 1
            assert samples[("litstarter_requests_total", (("route", "/predict"), ("status", "504")))] == 1
    finally:
        rc = server.stop()
    assert rc == 0, server.output()
    assert "heavy modules imported: []" in server.output()
