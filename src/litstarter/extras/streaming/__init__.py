"""``litstarter optimize``: a fit's data as LitData shards, streamed from a folder or object storage."""

COMMANDS = {"optimize": ("command", "write a fit's data as LitData shards (local or s3://) to train by streaming")}
NEEDS = {"optimize": ("litdata",)}
