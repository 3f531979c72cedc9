"""What every DataLoader worker does when it starts: Lightning's seeding, then the allocator tuning."""

from __future__ import annotations

from lightning.fabric.utilities.seed import pl_worker_init_function

from .heap import keep_freed_memory


def init_loader_worker(worker_id: int) -> None:
    """The loaders' ``worker_init_fn``: seed the worker as Lightning's ``pl_worker_init_function`` does (it adds
    that function only where no ``worker_init_fn`` is set), then keep freed memory in this process's heap."""
    pl_worker_init_function(worker_id)
    keep_freed_memory()
