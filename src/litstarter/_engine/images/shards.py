"""``shards.json``: the manifest beside a dataset written as LitData shards, and the mark that it is complete.

A shard folder holds one LitData dataset per split (``<root>/train/``, ``val/``, ``test/``: chunks and each its
``index.json``) and ``shards.json``: the targets' kind, the class names, the preprocessing parameters, the split
description, the train split's per-channel mean and std and class counts, and a fingerprint of the source. Training
needs nothing else from the original folder. ``shards.json`` is written last, so a folder (or an ``s3://`` prefix)
without it is not a dataset: locally the whole folder is renamed into place; on object storage, where there is no
rename, the manifest is the commit marker. No LitData, torch or boto3 here at import; ``s3://`` reads and writes go
through boto3 (which reads ``AWS_ENDPOINT_URL`` and the usual credentials), imported only then.
"""

from __future__ import annotations

import json
from pathlib import Path

from litstarter.errors import UsageError

from ..atomic_io import write_json

SHARDS_MANIFEST = "shards.json"
#: Bumped when the shards' fields change: shards of another version are rewritten, not read (2: ``target``).
SHARDS_VERSION = 2
#: What every manifest holds.
REQUIRED = (
    "version",
    "target_kind",
    "class_names",
    "channels",
    "image_size",
    "resize_size",
    "mean",
    "std",
    "splits",
    "fingerprint",
)


def is_remote(root: str) -> bool:
    """Whether ``root`` is an object-storage URL (``s3://``, ``gs://``, ...) rather than a local folder."""
    return "://" in str(root)


def join(root: str, *parts: str) -> str:
    """``root/part/...`` for a folder or a URL."""
    return "/".join([str(root).rstrip("/"), *parts])


def _bucket_key(url: str) -> tuple[str, str]:
    """``(bucket, key)`` of an ``s3://bucket/key`` URL; other schemes are refused in one line."""
    scheme, _, rest = url.partition("://")
    if scheme != "s3":
        raise UsageError(f"{url}: only s3:// object storage is supported for shards (or a local folder)")
    bucket, _, key = rest.partition("/")
    return bucket, key


def _s3():
    import boto3  # installed with LitData for s3://; the endpoint and credentials come from the environment

    return boto3.client("s3")


def read_manifest(root: str) -> dict | None:
    """The parsed ``shards.json`` under ``root``, or ``None`` when there is none (not a finished dataset)."""
    path = join(root, SHARDS_MANIFEST)
    if not is_remote(root):
        try:
            return json.loads(Path(path).read_text())
        except FileNotFoundError:
            return None
    bucket, key = _bucket_key(path)
    client = _s3()
    try:
        return json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    except client.exceptions.NoSuchKey:
        return None


def write_manifest(root: str, manifest: dict) -> None:
    """Write ``shards.json`` under ``root`` (atomically on a local disk; one PUT on object storage)."""
    path = join(root, SHARDS_MANIFEST)
    if not is_remote(root):
        write_json(path, manifest)
        return
    bucket, key = _bucket_key(path)
    body = json.dumps(manifest, indent=2, sort_keys=True).encode()
    _s3().put_object(Bucket=bucket, Key=key, Body=body)


def remote_keys(url: str) -> list[str]:
    """The object keys under an ``s3://`` prefix (at most a few; enough to tell an empty prefix)."""
    bucket, prefix = _bucket_key(url)
    prefix = prefix.rstrip("/") + "/" if prefix else ""
    listed = _s3().list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=10)
    return [item["Key"] for item in listed.get("Contents", [])]


def remote_files(url: str) -> list[str]:
    """Every object key under an ``s3://`` prefix, relative to it."""
    bucket, prefix = _bucket_key(url)
    prefix = prefix.rstrip("/") + "/" if prefix else ""
    pages = _s3().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return [item["Key"][len(prefix) :] for page in pages for item in page.get("Contents", [])]


def delete_remote(url: str) -> None:
    """Delete every object under an ``s3://`` prefix (``--overwrite``: after its manifest, so it is never whole)."""
    bucket, prefix = _bucket_key(url)
    client, prefix = _s3(), prefix.rstrip("/") + "/" if prefix else ""
    client.delete_object(Bucket=bucket, Key=prefix + SHARDS_MANIFEST)
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys})


def manifest_problem(manifest) -> str | None:
    """Why ``manifest`` is not one this version reads (a phrase), or ``None``."""
    if not isinstance(manifest, dict):
        return "it is not a JSON object"
    missing = [key for key in REQUIRED if key not in manifest]
    if missing:
        return f"it lacks {', '.join(missing)}"
    if manifest["version"] != SHARDS_VERSION:
        return f"it is version {manifest['version']}, this litstarter reads version {SHARDS_VERSION}"
    return None
