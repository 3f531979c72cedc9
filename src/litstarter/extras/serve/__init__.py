"""``litstarter serve``: an HTTP server for a checkpoint or any exported model, batching requests (uses deploy)."""

COMMANDS = {"serve": ("command", "answer HTTP requests with a checkpoint or any exported model, batching them")}
NEEDS = {"serve": ("starlette", "uvicorn", "prometheus_client")}
