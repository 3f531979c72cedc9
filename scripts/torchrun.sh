#!/usr/bin/env bash
# Launch `litstarter fit` with torchrun; Lightning picks up the ranks via TorchElasticEnvironment.
#
# One machine, all its GPUs (or N CPU processes with ACCELERATOR=cpu NPROC_PER_NODE=N):
#   scripts/torchrun.sh [extra litstarter args...]
#
# Several machines: run the same line on every node, changing only NODE_RANK. MASTER_ADDR is node 0's
# address, reachable from all nodes; MASTER_PORT a free port there:
#   NNODES=2 NODE_RANK=0 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 NPROC_PER_NODE=8 scripts/torchrun.sh
#   NNODES=2 NODE_RANK=1 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 NPROC_PER_NODE=8 scripts/torchrun.sh
#
# Resume after a failure: append --ckpt_path runs/<name>/version_<n>/checkpoints/last.ckpt
set -euo pipefail

NNODES="${NNODES:-1}"
NODE_RANK="${NODE_RANK:-0}"
MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"
MASTER_PORT="${MASTER_PORT:-29500}"
ACCELERATOR="${ACCELERATOR:-auto}"
if [[ -z "${NPROC_PER_NODE:-}" ]]; then
  NPROC_PER_NODE="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
  [[ "$NPROC_PER_NODE" -gt 0 ]] || NPROC_PER_NODE=1
fi
CONFIG="${CONFIG:-configs/default.yaml}"
TORCHRUN="${TORCHRUN:-torchrun}"

if [[ "$NNODES" -eq 1 ]]; then
  # --standalone: a private rendezvous on localhost with a free port; nothing to coordinate.
  launch=("$TORCHRUN" --standalone --nnodes 1 --nproc-per-node "$NPROC_PER_NODE")
else
  # Static rendezvous: every node meets node 0 at MASTER_ADDR:MASTER_PORT.
  launch=("$TORCHRUN" --nnodes "$NNODES" --nproc-per-node "$NPROC_PER_NODE" --node-rank "$NODE_RANK"
          --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT")
fi

# An empty array is "unbound" under `set -u` in bash < 4.4 (macOS): expand it as ${extra[@]+"${extra[@]}"}.
extra=()
# SyncBatchNorm (on in multinode.yaml) only works on GPUs.
[[ "$ACCELERATOR" == "cpu" ]] && extra=(--trainer.sync_batchnorm false)

exec "${launch[@]}" -m litstarter fit \
  --config "$CONFIG" --config configs/trainer/multinode.yaml \
  --trainer.accelerator "$ACCELERATOR" \
  --trainer.num_nodes "$NNODES" --trainer.devices "$NPROC_PER_NODE" \
  ${extra[@]+"${extra[@]}"} "$@"
