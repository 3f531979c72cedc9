"""Routes litstarter serve lacks, asked by ``tritonclient`` and by plain HTTP, against one real server process.

Every refusal is ``{"error": "<one line>"}`` with its status, so a protocol client shows why: Triton's model
configuration, statistics and repository routes are 404, a route's wrong method 405.
"""

from __future__ import annotations

import httpx
import pytest

from tests.extras.serve.test_serve import start_server

pytestmark = pytest.mark.slow
triton_http = pytest.importorskip("tritonclient.http")
triton_utils = pytest.importorskip("tritonclient.utils")


@pytest.fixture(scope="module")
def server(digits_export):
    server = start_server(digits_export.out / "model.onnx")
    yield server
    if server.proc.poll() is None:
        server.proc.kill()


@pytest.mark.parametrize(
    "call, route",
    [
        (lambda client: client.get_model_config("model"), "GET /v2/models/model/config"),
        (lambda client: client.get_inference_statistics("model"), "GET /v2/models/model/stats"),
        (lambda client: client.get_model_repository_index(), "POST /v2/repository/index"),
    ],
    ids=["model_config", "inference_statistics", "repository_index"],
)
def test_tritonclient_shows_why_a_route_is_not_served(server, call, route):
    client = triton_http.InferenceServerClient(server.url.removeprefix("http://"), network_timeout=30)
    with pytest.raises(triton_utils.InferenceServerException) as caught:
        call(client)
    assert caught.value.status() == "404", str(caught.value)
    message = caught.value.message()
    assert message.startswith(f"{route} is not a route of this server") and "/v2/models/{name}/infer" in message


def test_unknown_routes_and_wrong_methods_answer_json(server):
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for method, path, status, words in [
            ("GET", "/v2/nothing/here", 404, "the Open Inference Protocol's GET /v2"),
            ("POST", "/v2/models/model/unload", 404, "is not a route of this server"),
            ("GET", "/nothing", 404, "POST /predict"),
            ("GET", "/v2/models/model/infer", 405, "this route takes POST"),
            ("DELETE", "/predict", 405, "this route takes POST"),
        ]:
            answer = http.request(method, path)
            assert answer.status_code == status, (path, answer.text)
            assert answer.headers["content-type"] == "application/json", path
            message = answer.json()["error"]
            assert message.startswith(f"{method} {path}") and words in message and "\n" not in message, message
        assert "POST" in http.get("/v2/models/model/infer").headers["allow"]
