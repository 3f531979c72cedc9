"""``litstarter serve``: an HTTP server for a checkpoint or any exported model, batching requests (uses deploy)."""

COMMANDS = {"serve": ("command", "answer HTTP requests with a checkpoint or any exported model, batching them")}
NEEDS = {"serve": ("starlette", "uvicorn", "prometheus_client")}
PARTS = (
    "tests/extras/serve",
    "docs/serve.md",
    "benchmarks/serve.py",
    "benchmarks/serve_peers.py",
    "benchmarks/serve_peer_litserve.py",
    "examples/serve_client.py",
)
