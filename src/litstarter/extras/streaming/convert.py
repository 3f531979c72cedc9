"""Writing splits as LitData shards with LitData's own ``optimize()``, atomically, ``shards.json`` last.

Locally every split is written into a temporary folder beside the target (named with the owner tag, so a killed
conversion's leftovers are removed by the next run), then renamed into place: the target either does not exist or
is whole. On object storage there is no rename: an ``--overwrite`` deletes the old manifest first, the splits are
written, and ``shards.json`` goes last, after every split's ``index.json``, as the commit marker.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from pathlib import Path

from litstarter._engine.images.shards import delete_remote, is_remote, join, remote_keys, write_manifest
from litstarter._engine.leftovers import owner_tag, remove_stale
from litstarter.errors import BadInputError
from litstarter.extras.streaming.samples import Split, sample

#: LitData's chunk size: large enough for few files per split, small enough to stream in parallel.
CHUNK_BYTES = "64MB"


def optimize_split(split: Split, output_dir: str, num_workers: int) -> None:
    """One split as a LitData dataset in ``output_dir``, in ``split.order`` (``keep_data_ordered``: each worker
    writes a fixed slice, so the same inputs give the same chunks, and a seed the same epoch order). Each sample
    keeps its index in the split's arrays (``"index"``), which its augmentation seed is drawn from; an ``--encoded``
    split (``split.root``) stores its files' bytes instead of the arrays."""
    from litdata import optimize

    optimize(
        fn=functools.partial(sample, split=split),
        inputs=list(range(len(split.ids))) if split.order is None else [int(i) for i in split.order],
        output_dir=output_dir,
        num_workers=max(1, min(num_workers, len(split.ids))),
        chunk_bytes=CHUNK_BYTES,
        keep_data_ordered=True,
        # fork on Linux: the workers only index arrays and write chunks (no torch ops, so no thread pool to
        # inherit), and skip spawn's re-import of torch, seconds per split; elsewhere LitData's default (spawn).
        start_method="fork" if sys.platform == "linux" else None,
    )
    check_unchanged(split)


def check_unchanged(split: Split) -> None:
    """``--encoded``: refuse, in one line naming it, a file whose size, times or inode differ from what the cache
    recorded (and ``prepare_data`` checked) now that the writers have read it: it was rewritten or removed
    meanwhile, and its stored bytes may not be those decoded. The writers never raise (a writer that failed would
    leave LitData's processes behind; see ``samples._image``), so this check is where a file is named."""
    if split.root is None:
        return
    for id_, recorded in zip(split.ids, split.recorded, strict=True):
        path = Path(split.root) / id_
        try:
            stat = path.stat()
        except OSError:
            stat = None
        if stat is None or (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino) != tuple(recorded):
            what = "was removed" if stat is None else "changed"
            raise BadInputError(
                f"{path} {what} while litstarter optimize --encoded stored it; nothing was written; run it again"
            )


def is_empty(output: str) -> bool:
    """Whether ``output`` (a folder or an ``s3://`` prefix) holds nothing yet."""
    if is_remote(output):
        return not remote_keys(output)
    path = Path(output)
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def write_shards(splits: dict[str, Split], manifest: dict, output: str, num_workers: int) -> None:
    """Write every split under ``output/<split>/`` and ``shards.json`` last; what ``output`` held is replaced."""
    if is_remote(output):
        _write_remote(splits, manifest, output, num_workers)
    else:
        _write_local(splits, manifest, Path(output).expanduser().absolute(), num_workers)


def _write_local(splits: dict[str, Split], manifest: dict, target: Path, num_workers: int) -> None:
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale(parent.glob(f".{target.name}.*.tmp"))  # a killed conversion's folders, once its process is gone
    tmp, old = parent / f".{target.name}.{owner_tag()}.tmp", parent / f".{target.name}.{owner_tag()}.old.tmp"
    try:
        for name, split in splits.items():
            optimize_split(split, str(tmp / name), num_workers)
        write_manifest(str(tmp), manifest)
        if target.exists() and any(target.iterdir()):  # --overwrite, checked by the caller
            os.replace(target, old)
        elif target.exists():
            target.rmdir()
        os.replace(tmp, target)  # from here on the target is the new dataset, whole
    finally:
        for leftover in (tmp, old):
            if leftover.exists():
                shutil.rmtree(leftover)


def _write_remote(splits: dict[str, Split], manifest: dict, output: str, num_workers: int) -> None:
    if remote_keys(output):  # --overwrite, checked by the caller: no manifest from here on, so never "whole"
        delete_remote(output)
    for name, split in splits.items():
        optimize_split(split, join(output, name), num_workers)
    write_manifest(output, manifest)  # last: the commit marker
