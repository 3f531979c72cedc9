"""Run any litstarter artifact the same way: ``(B, C, H, W)`` uint8 numpy in, float32 logits ``(B, K)`` out.

``infer`` and the verification in ``export`` both go through :func:`open_model`, so what export checks is
what inference runs. Torch is imported only inside the torch backends: an ``.onnx`` model runs on a box
that has onnxruntime, numpy and Pillow and nothing else.

| suffix | backend | runtime |
| --- | --- | --- |
| ``.ckpt`` | the Lightning checkpoint, rebuilt as the plain network | torch (eager) |
| ``.pt`` | ``weights.pt`` (a state_dict) + the architecture in ``model.json`` | torch (eager) |
| ``.ts`` | TorchScript | ``torch.jit.load`` |
| ``.pt2`` | ``torch.export`` program | ``torch.export.load`` |
| ``.onnx`` | ONNX, fp32 or INT8 | ``onnxruntime.InferenceSession`` |
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import os
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from litstarter.errors import BadInputError, UsageError
from litstarter.extras.deploy.artifact_safety import check_pt2, require_trust
from litstarter.extras.deploy.contract import EMBEDDED_KEY, SIDECAR_NAME, ContractError, ModelContract, read_sidecar

#: File suffix -> backend kind.
KINDS = {".ckpt": "checkpoint", ".pt": "weights", ".ts": "torchscript", ".pt2": "exported", ".onnx": "onnx"}
#: Backend kind -> what the file should be, for messages.
KIND_NAMES = {
    "checkpoint": "a Lightning checkpoint",
    "weights": "a state_dict",
    "torchscript": "a TorchScript archive",
    "exported": "a torch.export archive",
    "onnx": "an ONNX model",
}

TORCHSCRIPT_NOTE = (
    "TorchScript is deprecated since torch 2.10 and torch.jit warns on every call; litstarter still writes and "
    "loads model.ts for deployments that need it, but prefer model.pt2 (torch.export) or model.onnx."
)
_torchscript_noted = False


@contextlib.contextmanager
def torchscript_quietly() -> Iterator[None]:
    """Silence torch.jit's per-call deprecation warnings inside the block, and warn once per process instead."""
    global _torchscript_noted
    if not _torchscript_noted:
        _torchscript_noted = True
        warnings.warn(TORCHSCRIPT_NOTE, FutureWarning, stacklevel=3)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`torch\.jit\.", category=FutureWarning)
        yield


def kind_of(path: str | os.PathLike) -> str:
    """The backend kind for a model file, from its suffix.

    Raises:
        ValueError: For an unknown suffix; the message lists the known ones.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in KINDS:
        raise UsageError(f"don't know how to run {path}: expected one of {sorted(KINDS)} (suffix {suffix!r})")
    return KINDS[suffix]


class Backend:
    """A loaded model: call it on ``(B, C, H, W)`` uint8 images to get ``(B, K)`` float32 logits.

    Args:
        path: The model file.
        kind: One of :data:`KINDS`' values.
        contract: The model's input contract.
        run: The function doing the work.
        runtime: A human-readable runtime name and version, for reports.
    """

    def __init__(
        self, path: Path, kind: str, contract: ModelContract, run: Callable[[np.ndarray], np.ndarray], runtime: str
    ) -> None:
        self.path = path
        self.kind = kind
        self.contract = contract
        self.runtime = runtime
        self._run = run

    def __call__(self, images: np.ndarray) -> np.ndarray:
        """``(B, C, H, W)`` uint8 -> float32 logits, ``(B, num_classes)`` (``(B, num_classes, H, W)`` for maps)."""
        c = self.contract
        expected = (c.channels, *c.image_size)
        if images.dtype != np.uint8 or images.ndim != 4 or tuple(images.shape[1:]) != expected:
            raise ValueError(
                f"{self.path.name} takes uint8 (B, {', '.join(map(str, expected))}) images, "
                f"got {images.dtype} {tuple(images.shape)}"
            )
        return np.asarray(self._run(np.ascontiguousarray(images)), dtype=np.float32)


def open_model(
    path: str | os.PathLike,
    kind: str | None = None,
    contract: ModelContract | None = None,
    num_threads: int | None = None,
    trust_model: bool = False,
    spin: bool = True,
) -> Backend:
    """Load a model file into a :class:`Backend`.

    The contract comes from, in order: ``contract`` if given; the copy embedded in the artifact (ONNX metadata,
    TorchScript / pt2 extra files); ``model.json`` beside it; for a checkpoint, its hyper-parameters.

    Args:
        path: A ``.ckpt``, ``weights.pt``, ``.ts``, ``.pt2`` or ``.onnx`` file.
        kind: Backend kind; inferred from the suffix when ``None`` (export passes it for temporary names).
        contract: Use this contract instead of looking for one.
        num_threads: Intra-op threads for the runtime; ``None`` keeps the runtime's default.
        trust_model: Load formats that can run code (TorchScript; a ``.pt2`` holding anything beyond plain
            tensors and aten calls; a checkpoint or ``weights.pt`` whose backbone class lives outside litstarter).
            Only for files you made yourself: see :mod:`litstarter.extras.deploy.artifact_safety`.
        spin: Let ONNX Runtime's idle intra-op threads spin-wait for the next run (its default; the lowest
            latency for a process that does nothing else between runs). ``serve`` turns it off: there the
            threads share the cores with HTTP parsing and decoding, and spinning took 1.47x batching down to 1.29x.

    Raises:
        UsageError: If ``path`` does not exist or may not be read (a permission, not a corrupt file).
        ValueError: (``CheckpointError``, ``ContractError``) for a refused, mismatched or undescribed model.
        UntrustedModelError: For a model that could run code when loaded, without ``trust_model``.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"model not found: {path}")
    kind = kind or kind_of(path)
    check_readable(path)
    if kind == "torchscript":
        require_trust(path, "a TorchScript archive is a program that torch.jit.load compiles and runs", trust_model)
    if kind == "exported":
        backend = _open_exported(path, contract, num_threads, trust_model)
    else:
        loader = {
            "onnx": functools.partial(_open_onnx, spin=spin),
            "checkpoint": _open_checkpoint,
            "weights": _open_weights,
            "torchscript": _open_torchscript,
        }
        backend = loader[kind](path, contract, num_threads, trust_model)
    check_contract_fits(backend)
    return backend


def check_readable(path: Path) -> None:
    """Refuse a model file this process may not read as the permission problem it is, before a runtime calls it
    corrupt (ONNX Runtime and torch.jit report an unopenable file as one they cannot parse).

    Raises:
        UsageError: Naming the file, its mode and owner.
    """
    try:
        with open(path, "rb"):
            pass
    except PermissionError:
        info = path.stat()
        raise UsageError(
            f"cannot read the model file {path}: permission denied (mode {info.st_mode & 0o777:03o}, owner uid"
            f" {info.st_uid}). The file is not corrupt: give this user read permission (chmod u+r, or a+r) or run"
            " as one who has it"
        ) from None


@contextlib.contextmanager
def _loading(path: Path, kind: str) -> Iterator[None]:
    """Turn the runtime's failure to parse a model file (a truncated or corrupt file, another format under this
    suffix) into one sentence naming the file. Wraps only the runtime's own load call."""
    try:
        yield
    except Exception as err:
        reason = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
        raise BadInputError(
            f"cannot load {path} as {KIND_NAMES[kind]}: {reason[:300]}. The file is corrupt, truncated or not what"
            " its suffix says; export it again with `litstarter export`"
        ) from err


def check_contract_fits(backend: Backend) -> None:
    """Check the contract against the loaded model's real input and output shapes, before any file is read.

    A contract that disagrees with its model (5 class names for 10 logits, channels 3 for a 1-channel model, an
    ``image_size`` other than the one the model was trained at) would otherwise fail after all the decoding, or
    predict silently with the wrong preprocessing. One forward pass of a zero batch of the contract's shape.

    Raises:
        ContractError: Naming the contract field that does not fit.
    """
    c, path = backend.contract, backend.path
    where = f"the contract of {path.name} ({SIDECAR_NAME} or the copy embedded in the file)"
    trained_at = c.architecture.get("image_size")
    if trained_at is not None and list(trained_at) != list(c.image_size):
        raise ContractError(
            f"{where}: preprocessing.image_size is {list(c.image_size)}, but the model was trained at"
            f" {list(trained_at)} (architecture.image_size)"
        )
    if c.architecture.get("in_channels") not in (None, c.channels):
        raise ContractError(
            f"{where}: input.shape gives {c.channels} channel(s), but the model takes"
            f" {c.architecture['in_channels']} (architecture.in_channels)"
        )
    probe = np.zeros((2, c.channels, *c.image_size), dtype=np.uint8)
    try:
        logits = backend(probe)
    except Exception as err:
        reason = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
        raise ContractError(
            f"{where}: the model does not take images of {c.channels} channel(s) at {list(c.image_size)} (input.shape,"
            f" preprocessing.image_size): {reason[:300]}"
        ) from err
    expected = tuple(c.answers().logits_shape(c.image_size))  # the task's: [K], or [K, H, W] for maps
    if tuple(logits.shape[1:]) != expected:
        raise ContractError(
            f"{where}: class_names has {c.num_classes} names, and the task's output per image is {list(expected)},"
            f" but the model outputs {tuple(logits.shape[1:])} logits per image"
        )


def _resolve_contract(path: Path, contract: ModelContract | None, embedded: str | bytes | None) -> ModelContract:
    if contract is not None:
        return contract
    if embedded:
        return ModelContract.from_json(embedded, source=f"the contract embedded in {path}")
    sidecar = read_sidecar(path)
    if sidecar is None:
        raise ContractError(f"{path} carries no input contract and there is no {SIDECAR_NAME} beside it")
    return sidecar


# ORT's defaults, stated (benchmarks/deploy_inference.py reports them): every graph optimisation (constant folding,
# fusions, QDQ pairs into integer kernels) and one op at a time, each op using the intra-op threads (parallel
# execution of independent ops only pays for branchy graphs; ours are chains).
ORT_OPTIMIZATION_LEVEL = "ORT_ENABLE_ALL"
ORT_EXECUTION_MODE = "ORT_SEQUENTIAL"


def _open_onnx(
    path: Path, contract: ModelContract | None, num_threads: int | None, trust_model: bool, spin: bool = True
) -> Backend:
    if importlib.util.find_spec("onnxruntime") is None:
        raise UsageError(
            f"{path.name}: running an ONNX model needs onnxruntime, which the [deploy] extra installs:"
            " pip install -e '.[deploy]'"
        )
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, ORT_OPTIMIZATION_LEVEL)
    options.execution_mode = getattr(ort.ExecutionMode, ORT_EXECUTION_MODE)
    if num_threads:
        options.intra_op_num_threads = num_threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    # Errors only: ORT's load-time warnings are its optimiser's notes (a per-image Loop's subgraph names), not faults.
    options.log_severity_level = 3
    with _loading(path, "onnx"):
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    embedded = session.get_modelmeta().custom_metadata_map.get(EMBEDDED_KEY)
    contract = _resolve_contract(path, contract, embedded)
    inputs = {i.name: i.type for i in session.get_inputs()}
    if inputs.get(contract.input_name) != "tensor(uint8)":
        raise ContractError(f"{path}: expected a uint8 input named {contract.input_name!r}, found {inputs}")

    def run(images: np.ndarray) -> np.ndarray:
        return session.run([contract.output_name], {contract.input_name: images})[0]

    return Backend(path, "onnx", contract, run, f"onnxruntime {ort.__version__}")


def _torch_run(module, num_threads: int | None) -> Callable[[np.ndarray], np.ndarray]:
    """Wrap a torch callable: numpy in, numpy out, under ``inference_mode``."""
    import torch

    if num_threads:
        torch.set_num_threads(num_threads)

    def run(images: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return module(torch.from_numpy(images)).float().numpy()

    return run


def _open_checkpoint(path: Path, contract: ModelContract | None, num_threads: int | None, trust_model: bool) -> Backend:
    import torch

    from litstarter.extras.deploy.checkpoint import network_from_checkpoint
    from litstarter.models.network import architecture_of

    net, hparams = network_from_checkpoint(path, trust_model=trust_model)  # a backbone of yours needs trust
    if contract is None:
        contract = ModelContract.from_hparams(hparams, *net.normalization(), architecture=architecture_of(hparams))
    return Backend(path, "checkpoint", contract, _torch_run(net.eval(), num_threads), f"torch {torch.__version__}")


def _open_weights(path: Path, contract: ModelContract | None, num_threads: int | None, trust_model: bool) -> Backend:
    import torch

    from litstarter._engine.checkpoints import CheckpointError, load_state_dict_checked, load_torch_file
    from litstarter.models.build import build_network

    contract = _resolve_contract(path, contract, None)  # a state_dict carries nothing but tensors
    if not contract.architecture:
        raise ContractError(f"the contract for {path} has no 'architecture', so weights.pt cannot be rebuilt")
    state = load_torch_file(path)
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path} is not a state_dict (a dict of tensors); for a Lightning checkpoint use .ckpt")
    net = build_network(contract.architecture, trust_model=trust_model)
    load_state_dict_checked(net, state, source=f"weights {path}")
    return Backend(path, "weights", contract, _torch_run(net.eval(), num_threads), f"torch {torch.__version__}")


def _open_torchscript(
    path: Path, contract: ModelContract | None, num_threads: int | None, trust_model: bool
) -> Backend:
    import torch

    extra = {EMBEDDED_KEY: ""}
    with torchscript_quietly(), _loading(path, "torchscript"):
        module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    contract = _resolve_contract(path, contract, extra[EMBEDDED_KEY])
    return Backend(
        path, "torchscript", contract, _torch_run(module.eval(), num_threads), f"torch.jit {torch.__version__}"
    )


def _open_exported(path: Path, contract: ModelContract | None, num_threads: int | None, trust_model: bool) -> Backend:
    import torch

    data = path.read_bytes()  # checked and loaded from the same bytes
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise BadInputError(
            f"cannot load {path} as {KIND_NAMES['exported']}: it is not a zip archive (corrupt or truncated?); export"
            " it again with `litstarter export`"
        )
    if not trust_model:
        check_pt2(path, data)
    extra = {EMBEDDED_KEY: ""}
    # Through a buffer: torch.export.load insists on a ".pt2" file name, and export verifies temporary files.
    with _loading(path, "exported"):
        program = torch.export.load(io.BytesIO(data), extra_files=extra)
    contract = _resolve_contract(path, contract, extra[EMBEDDED_KEY])
    # No .eval() here (an exported module refuses it): the program was captured from the model in eval mode.
    module = program.module()
    return Backend(path, "exported", contract, _torch_run(module, num_threads), f"torch.export {torch.__version__}")
