"""Classify image files with a running ``litstarter serve``, using nothing but the Python standard library.

    python examples/serve_client.py --url http://127.0.0.1:8000 digit.png photo.jpg
    python examples/serve_client.py --url http://127.0.0.1:8000 --json digit.png    # base64 JSON bodies

Prints one line per file: its top classes with their probabilities, or the server's one-line error. Exits 1
if any file was refused.
"""

from __future__ import annotations

import argparse
import base64
import json
import mimetypes
import sys
import urllib.error
import urllib.request
from pathlib import Path


def predict(url: str, path: Path, as_json: bool = False, timeout: float = 60) -> dict:
    """POST one image file to ``<url>/predict``; return the server's JSON answer (``predictions`` or ``error``)."""
    data = path.read_bytes()
    if as_json:
        body, content_type = json.dumps({"image": base64.b64encode(data).decode()}).encode(), "application/json"
    else:
        guessed = mimetypes.guess_type(path.name)[0] or ""
        body, content_type = data, guessed if guessed.startswith("image/") else "image/unknown"
    request = urllib.request.Request(
        f"{url.rstrip('/')}/predict", data=body, headers={"Content-Type": content_type}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.load(response)
    except urllib.error.HTTPError as err:  # 4xx / 5xx: the body still says why
        return {"error": f"{err.code}: {json.load(err).get('error', err.reason)}"}


def main() -> int:
    parser = argparse.ArgumentParser(description="Classify image files with a running litstarter serve.")
    parser.add_argument("files", nargs="+", type=Path, help="Image files.")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="The server.")
    parser.add_argument("--json", action="store_true", help='Send {"image": "<base64>"} instead of raw bytes.')
    args = parser.parse_args()
    refused = 0
    for path in args.files:
        answer = predict(args.url, path, args.json)
        if "error" in answer:
            refused += 1
            print(f"{path}: error {answer['error']}")
        else:
            print(f"{path}: " + ", ".join(f"{p['class']} {p['prob']:.3f}" for p in answer["predictions"]))
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
