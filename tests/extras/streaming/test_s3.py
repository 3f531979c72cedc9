"""``s3://``: the same conversion, skip and fit through LitData's own client (boto3 lists, obstore moves chunks),
against moto's standalone server on the loopback: a local stand-in for the real service, over plain HTTP."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from litstarter._engine.images.shards import remote_keys
from tests.extras.streaming.conftest import optimize
from tests.extras.streaming.test_optimize import stream_eval_view
from tests.helpers import fast_fit_args, free_port, run_cli

pytestmark = pytest.mark.slow
MOTO = shutil.which("moto_server")


@pytest.fixture(scope="module")
def endpoint():
    """moto's S3 on a free loopback port, for this module."""
    if MOTO is None:
        pytest.skip("moto_server is not installed (pip install 'moto[server]')")
    port = free_port()
    server = subprocess.Popen([MOTO, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    yield f"http://127.0.0.1:{port}"
    server.terminate()
    server.wait(10)


@pytest.fixture
def bucket(endpoint, monkeypatch) -> str:
    """A fresh bucket, with the environment LitData and boto3 read pointing at the stand-in."""
    import boto3
    from litdata.streaming import downloader

    for key, value in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    # obstore refuses plain HTTP, which only the stand-in speaks (real S3 is HTTPS): allow it for this test alone.
    monkeypatch.setitem(downloader._OBSTORE_CLIENT_OPTIONS, "allow_http", "true")
    client = boto3.client("s3")
    for _ in range(50):  # the server takes a moment to listen
        try:
            client.create_bucket(Bucket="litstarter-shards")
            break
        except Exception:
            time.sleep(0.1)
    return "s3://litstarter-shards"


def test_shards_on_object_storage_convert_skip_refuse_and_train(converted, bucket: str, tmp_path: Path, capsys) -> None:
    url = f"{bucket}/photos"
    assert optimize([*converted["args"], "--output", url]) == 0
    keys = remote_keys(url)
    assert "photos/shards.json" in keys and "photos/train/index.json" in keys
    assert optimize([*converted["args"], "--output", url]) == 0
    assert "up to date" in capsys.readouterr().out
    other = [*converted["args"], "--data.image_size", "16", "--output", url]
    assert optimize(other) == 2 and "--overwrite" in capsys.readouterr().err
    local, remote = (stream_eval_view(root, "val") for root in (converted["output"], url))
    assert local[0].tobytes() == remote[0].tobytes() and local[1].tolist() == remote[1].tolist()
    run_cli([*fast_fit_args(tmp_path, epochs=1, name="s3"), "--data", "litstarter.data.StreamingDataModule",
             f"--data.root={url}", "--data.num_workers=0", f"--data.cache_dir={tmp_path / 'chunks'}",
             "--baseline=false", "--trainer.enable_progress_bar=false"])  # fmt: skip
    assert (tmp_path / "s3" / "version_0" / "metrics.json").is_file()
