"""What every task shares: the network, the optimiser and scheduler, fine-tuning, memory savers and checkpoints.

A task is a subclass of :class:`ImageTask` (``tasks/classification.py``, or a project's own ``task.py``) that owns
its loss, its metrics, the steps that feed them and what a prediction returns, with only its own arguments. The
config picks it by class path (``--config configs/task/<name>.yaml``); the data module says what its targets are
(``target_kind``) and the task refuses, in one line, targets that are not its own. Public: ``litstarter.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import lightning as L
import torch
from lightning.pytorch.cli import LRSchedulerCallable, OptimizerCallable
from lightning.pytorch.utilities import rank_zero_info
from torchmetrics import MeanMetric, MetricCollection

from litstarter import optim
from litstarter._engine.batch_plan import ScaleMode, batch_plan, scale_lr
from litstarter._engine.checkpoints import compile_child, match_keys, uncompile_child, uncompiled_keys
from litstarter._engine.init_from import TransferReport, load_matching_weights
from litstarter._engine.schedulers import build_scheduler
from litstarter.callbacks.freeze_backbone import FreezeBackbone
from litstarter.errors import UsageError
from litstarter.models import check_weights, create_backbone, list_backbones
from litstarter.models.build import build_network
from litstarter.models.network import UNRECORDED, architecture_of
from litstarter.models.tiling import needs_windows, run_tiled, task_tiling

# ReduceLROnPlateau is stepped once per epoch, after validation, on this metric.
PLATEAU_MONITOR = "val/loss"
# The registry is the one list of named backbones: --help shows it. Any other string is a class path of your own.
BackboneName = Literal[tuple(list_backbones())]


class ImageTask(L.LightningModule):
    """The shared base of every task: a network of a backbone and a head, trained by the task's loss.

    A subclass sets :attr:`task_name` (one of :func:`litstarter.tasks.task_names`: the answers that ``export``,
    ``infer`` and ``serve`` give) and :attr:`target_kind`, and defines its ``loss`` and its four steps:
    ``training_step`` returns the loss (after :meth:`log_train_loss`), ``validation_step`` feeds its metrics (and
    ``self.val_loss``, a mean over the epoch's images) and ``on_validation_epoch_end`` logs them with ``val/select``
    (what checkpoints and early stopping follow: higher is better), ``test_step`` feeds ``test/*``, and
    ``predict_step`` returns what a prediction is. It may add :meth:`answers_state` and :meth:`unsaved_arguments`.
    The network is ``self.net`` (``self(images)`` runs it on ``(B, C, H, W)`` images in 0..255), built from the
    arguments below.

    Args:
        backbone: A registered name (``litstarter.models.list_backbones()``; ``configs/model/<name>.yaml`` selects
            one), ``timm/<name>`` (any timm model, with the ``[timm]`` extra) or the class path of your own
            ``nn.Module`` meeting the contract in ``litstarter.models.registry``.
        num_classes: Number of outputs (classes or labels); linked from ``data.num_classes``.
        in_channels: Image channels; linked from ``data.channels``.
        image_size: Input ``[height, width]``; linked from ``data.image_size`` and recorded for export.
        class_names: Output names in order; linked from ``data.class_names``.
        resize_size: ``[height, width]`` the data stores images at before the eval view centre-crops ``image_size``
            (linked; recorded so inference on files resizes as training did); ``null``: ``image_size``.
        interpolation: The filter the data resized with, ``bilinear`` or ``bicubic`` (linked; recorded, as above).
        backbone_kwargs: Extra arguments for the backbone factory (e.g. ``widths`` for ``small_cnn``).
        weights: Pretrained backbone weights: ``null`` (random init), a torchvision weights name (``IMAGENET1K_V1``,
            ``DEFAULT``; downloaded to ``torch.hub.get_dir()/checkpoints`` once), ``pretrained`` (timm's, through the
            Hugging Face hub cache), or a state_dict file. Loaded when a fit starts (not on resume, nor by
            ``load_from_checkpoint``); another channel count adapts the stem.
        init_from: A checkpoint of ours, an exported ``weights.pt`` or a backbone state_dict to start from, after
            ``weights``: every tensor that fits loads, the head is replaced when the outputs differ.
        freeze_backbone_epochs: Train only the head for this many epochs first (backbone frozen in eval mode).
        backbone_lr_scale: The backbone's learning rate as a fraction of the head's (e.g. 0.1 when fine-tuning),
            in parameter groups of its own, logged as ``lr-<optimizer>/backbone``.
        layer_decay: Layer-wise learning-rate decay (e.g. 0.75): each backbone layer trains at this factor of the
            rate of the layer above it, the head at the full rate (timm/<name> backbones; ``null``: off).
        dropout: Dropout before the linear head, in [0, 1).
        optimizer: Optimiser factory over the parameter groups; ``null``: AdamW (lr 3e-3, weight decay 0.05).
        lr_scheduler: Scheduler factory, stepped every optimiser step (``ReduceLROnPlateau``: every epoch, on
            ``val/loss``); an unset ``total_steps`` is filled in from the Trainer. ``null``: 5% warmup, then cosine.
        no_decay_norm_and_bias: Exempt norm-layer parameters and biases from weight decay.
        gradient_checkpointing: Recompute the backbone's activations in backward: less memory for about one more
            forward pass (the backbone must implement ``set_grad_checkpointing``, as ``small_cnn`` does).
        channels_last: NHWC memory layout for the network and its inputs: faster convolutions on tensor cores.
        compile: ``torch.compile`` the backbone while fitting (``true``, or its arguments such as
            ``{mode: max-autotune}``); checkpoints are saved without the compiler's key prefix.
        scale_lr_with_batch: Scale the learning rate with the effective global batch (per-device batch x devices x
            nodes x accumulation) against ``reference_batch_size``: ``linear``, ``sqrt`` (gentler) or ``none``.
        reference_batch_size: The global batch the configured learning rate was tuned for.
        tiles: ``{"size": [h, w], "overlap", "max_side"}`` (linked from ``data.tiles``): the network takes windows of
            ``image_size``, and ``self(images)`` on larger images slides them (:mod:`litstarter.models.tiling`:
            segmentation blends the logits, detection merges the boxes across the seams), as ``infer`` does;
            recorded for export. ``null``: one view per image.
    """

    #: The task's name in checkpoints and ``model.json`` (downstream code looks its answers up by it).
    task_name: ClassVar[str] = ""
    #: The targets the task trains on; the data module's ``target_kind`` must be the same.
    target_kind: ClassVar[str] = ""
    #: Where to find the config that selects this task (named when the data's targets are another task's).
    task_config: ClassVar[str] = ""
    #: After the test after fit, ``baseline(datamodule, metrics_path, seed=, epochs=, trainer=)`` scores simple
    #: models on the same split beside the network (``litstarter.baseline``); None: no baseline.
    baseline: ClassVar = None
    #: Read by ThroughputMonitor each step; None: FLOPs not measured (it then logs samples/s, no MFU).
    flops_per_batch: int | None = None

    def __init__(
        self,
        backbone: BackboneName | str = "small_cnn",
        num_classes: int = 10,
        in_channels: int = 3,
        image_size: tuple[int, int] = (224, 224),
        class_names: list[str] | None = None,
        resize_size: tuple[int, int] | None = None,
        interpolation: Literal["bilinear", "bicubic"] = "bilinear",
        backbone_kwargs: dict | None = None,
        weights: str | None = None,
        init_from: str | None = None,
        freeze_backbone_epochs: int = 0,
        backbone_lr_scale: float = 1.0,
        layer_decay: float | None = None,
        dropout: float = 0.0,
        optimizer: OptimizerCallable | None = None,
        lr_scheduler: LRSchedulerCallable | None = None,
        no_decay_norm_and_bias: bool = True,
        gradient_checkpointing: bool = False,
        channels_last: bool = False,
        compile: bool | dict = False,
        scale_lr_with_batch: ScaleMode = "none",
        reference_batch_size: int = 64,
        tiles: dict | None = None,
    ) -> None:
        super().__init__()
        check_shared_arguments(num_classes, class_names, freeze_backbone_epochs, backbone_lr_scale, dropout)
        if reference_batch_size < 1:
            raise UsageError(f"model.reference_batch_size must be >= 1, got {reference_batch_size}")
        # Evaluation choices are not saved (a task lists them): `test --ckpt_path` takes them from the config.
        self.save_hyperparameters(ignore=list(self.unsaved_arguments()))
        self.class_names = list(class_names) if class_names else [str(i) for i in range(num_classes)]
        # Defaults as None, not as functions: hparams then hold no pickled function, so a checkpoint made
        # from plain Python still loads with weights_only=True.
        self.optimizer = optimizer or optim.default_optimizer
        self.lr_scheduler = lr_scheduler or optim.default_scheduler
        # The same build as a checkpoint's rebuild; mean/std are placeholders until setup() copies the data's.
        self.net = build_network(architecture_of(self.hparams))
        try:  # a weights name is checked now; files are read when fitting starts
            check_weights(backbone, weights)
        except ValueError as err:
            raise UsageError(f"model.weights: {err}") from None
        self.net.set_memory_options(gradient_checkpointing=gradient_checkpointing, channels_last=channels_last)
        self.init_report: TransferReport | None = None  # what init_from loaded, once a fit has started
        self.train_loss, self.val_loss = MeanMetric(), MeanMetric()  # every task's: means over an epoch's images
        self.train_metrics: MetricCollection | None = None  # a task's train metrics, logged at each epoch's end
        self.tiling, self.tile_rule = task_tiling(tiles, self.task_name)  # windows over larger images, and their rule

    @classmethod
    def unsaved_arguments(cls) -> tuple[str, ...]:
        """Arguments a task keeps out of its checkpoints' hyper-parameters (evaluation choices)."""
        return ()

    @classmethod
    def check_targets(cls, datamodule) -> None:
        """Refuse, in one line, data whose targets are another task's (its ``target_kind``, ``class`` if unset)."""
        kind = getattr(datamodule, "target_kind", "class")
        if kind != cls.target_kind:
            mismatch = getattr(datamodule, "targets_mismatch", None)  # a cell of the data that decided its kind
            cause = mismatch(cls.target_kind) if callable(mismatch) else None
            if cause:
                raise UsageError(f"{cause} (the task is {cls.__name__}, which trains on {cls.target_kind} targets)")
            source = getattr(datamodule, "target_source", None) or f"data ({type(datamodule).__name__})"
            raise UsageError(
                f"{source} holds {kind} targets but the task is {cls.__name__}, which trains on"
                f" {cls.target_kind} targets; pick the task for them, e.g. --config {config_for_kind(kind)}, or give"
                f" this task data with {cls.target_kind} targets"
            )

    def setup(self, stage: str) -> None:
        """Before fitting: the data's normalisation (a resume's overwrites it), the size it stores images at (for
        inference on files) and its own ids of the classes where it has them (COCO's category ids: checkpoints
        record them, and ``model.json`` after them, for ``infer``'s COCO results)."""
        datamodule = self.trainer.datamodule
        if stage != "fit" or datamodule is None:
            return
        if hasattr(datamodule, "normalization"):
            mean, std = datamodule.normalization()
            if hasattr(self.net.backbone, "resolve_normalization"):  # a backbone with a pretrained config (timm)
                pretrained = self.hparams.get("weights") is not None
                mean, std = self.net.backbone.resolve_normalization(mean, std, self.hparams.image_size, pretrained)
            self.net.set_normalization(mean, std)
        stored = getattr(datamodule, "resize_size", None) or getattr(datamodule, "image_size", None)
        if stored is not None and self.hparams.get("resize_size") is None:
            self.hparams.resize_size = tuple(int(v) for v in stored)
        ids = getattr(datamodule, "category_ids", None)  # COCO's own category ids: infer's COCO results give them
        self.category_ids = list(ids) if ids is not None and len(ids) == len(self.class_names) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images ``(B, C, H, W)`` in 0..255 -> the network's outputs ``(B, num_classes)``; with ``tiles``, images
        other than one window go through the windows (the same outputs, for the whole image)."""
        if self.hparams.get("channels_last"):
            x = x.contiguous(memory_format=torch.channels_last)  # uint8: the cheapest moment to reorder
        if needs_windows(x, self.tiling):
            return run_tiled(self.net, x, self.tiling, self.tile_rule, self.hparams.get("nms_iou", 0.5))
        return self.net(x)

    def log_train_loss(self, loss: torch.Tensor) -> None:
        """Per step this rank's value, unsynchronised; per epoch a torchmetrics mean, reduced once at its end."""
        self.log("train/loss_step", loss, on_step=True, on_epoch=False, prog_bar=True)
        self.train_loss.update(loss.detach())

    def on_train_epoch_end(self) -> None:
        """Log and reset the epoch's train loss and metrics (synchronised across processes by torchmetrics)."""
        if self.train_metrics is not None:
            self.log_dict(self.train_metrics.compute())
            self.train_metrics.reset()
        self.log("train/loss_epoch", self.train_loss.compute())
        self.train_loss.reset()

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        """Log the gradient norm before clipping (AMP has unscaled it): rising spikes come before a loss that goes
        NaN. Only on the steps that reach the logger: the norm is a pass over every gradient."""
        if logs_this_step(self.trainer):
            self.log("train/grad_norm", optim.total_grad_norm(self.parameters()), on_step=True, on_epoch=False)

    def configure_callbacks(self) -> list:
        """:class:`FreezeBackbone` while ``freeze_backbone_epochs`` > 0."""
        epochs = self.hparams.get("freeze_backbone_epochs", 0)
        return [FreezeBackbone(epochs)] if epochs else []

    def load_initial_weights(self) -> TransferReport | None:
        """Load ``weights`` into the backbone, then ``init_from`` into the network; returns (and keeps as
        ``init_report``) what ``init_from`` loaded. Called when a fit starts without ``ckpt_path``."""
        h = self.hparams
        if h.get("weights") is not None:  # the factory logs what it loaded
            kwargs = h.get("backbone_kwargs") or {}
            pretrained = create_backbone(h.backbone, h.in_channels, h.weights, h.get("image_size"), **kwargs)
            self.net.backbone.load_state_dict(pretrained.state_dict())
        if h.get("init_from") is not None:
            self.init_report = load_matching_weights(self.net, h.init_from, self.class_names)
            rank_zero_info(self.init_report.summary())
        return self.init_report

    def on_fit_start(self) -> None:
        """Load ``weights``/``init_from`` (unless resuming), then compile the backbone if asked."""
        if self.trainer.ckpt_path is None:
            self.load_initial_weights()
        compile_child(self.net, "backbone", self.hparams.get("compile"))

    def on_fit_end(self) -> None:
        """Undo ``compile``: testing, export and later fits get the plain backbone (same parameters)."""
        uncompile_child(self.net, "backbone")

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Save weights under their uncompiled names, so a compiled run's checkpoint loads anywhere; record the
        task's name, which export looks the task's answers up by, and their state."""
        checkpoint["state_dict"] = uncompiled_keys(checkpoint["state_dict"])
        checkpoint["task"] = self.task_name
        checkpoint["answers"] = self.answers_state()
        if getattr(self, "category_ids", None) is not None:  # the data's own ids of the classes (COCO's)
            checkpoint["answers"]["category_ids"] = list(self.category_ids)

    def answers_state(self) -> dict:
        """What the task's answers need beyond the names (``litstarter.tasks.answers``), as plain lists: saved in
        checkpoints, read by export into ``model.json``. Nothing, unless a task says otherwise."""
        return {}

    def shape_differences(self, saved: dict) -> list[str]:
        """The keys fixing the network's shape (``architecture_of``'s, the classes aside) on which a checkpoint saved
        with hyper-parameters ``saved`` differs from this task, as ``model.<key> <there> there, <here> here``: what
        to set when it does not fit. A key added since it was written counts as the shape it had then."""
        here = architecture_of(self.hparams)
        there = {k: saved[k] if k in saved else UNRECORDED.get(k) for k in here}
        keys = [k for k in here if k != "num_classes" and there[k] != here[k]]
        return [f"model.{k} {there[k]!r} there, {here[k]!r} here" for k in keys]

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """Match the checkpoint's keys to this model, compiled or not, whichever way the checkpoint was saved."""
        checkpoint["state_dict"] = match_keys(checkpoint["state_dict"], self.state_dict())

    def configure_optimizers(self):
        """``optimizer`` over the parameter groups; ``lr_scheduler`` every step (``ReduceLROnPlateau``: every epoch)."""
        hparams = self.hparams
        lr_scale, no_decay = hparams.get("backbone_lr_scale", 1.0), hparams.get("no_decay_norm_and_bias", True)
        groups = optim.param_groups(self, no_decay, self.net.backbone, lr_scale, hparams.get("layer_decay"))
        optimizer = self.optimizer(groups)
        optim.scale_backbone_groups(optimizer, lr_scale)  # before the scheduler reads each group's lr as its base
        mode, reference = hparams.get("scale_lr_with_batch", "none"), hparams.get("reference_batch_size", 64)
        scale_lr(optimizer, batch_plan(self.trainer), mode, reference)
        optim.apply_lr_scales(optimizer)  # layer decay's per-group lr_scale
        scheduler = build_scheduler(self.lr_scheduler, optimizer, self.trainer.estimated_stepping_batches)
        return {"optimizer": optimizer, "lr_scheduler": optim.scheduler_config(scheduler, PLATEAU_MONITOR)}


def config_for_kind(kind: str) -> str:
    """The config that selects the task for ``kind`` targets (the package's own tasks)."""
    for task in all_subclasses(ImageTask):
        if task.target_kind == kind and task.task_config:
            return task.task_config
    return "configs/task/<the task for them>.yaml"


def all_subclasses(cls: type) -> list[type]:
    """Every subclass of ``cls`` imported so far, depth first."""
    return [sub for direct in cls.__subclasses__() for sub in (direct, *all_subclasses(direct))]


def batch_size(batch: tuple[torch.Tensor, torch.Tensor] | torch.Tensor) -> int:
    """Samples in an ``(images, targets)`` batch or an images-only one; ``ThroughputMonitor``'s ``batch_size_fn``."""
    return len(batch[0] if isinstance(batch, (tuple, list)) else batch)


def logs_this_step(trainer: L.Trainer) -> bool:
    """Whether the optimiser step under way reaches the logger: Lightning's own test (every ``log_every_n_steps``-th
    step, and the last), from public attributes (before the step, ``global_step`` counts the steps done)."""
    return (trainer.global_step + 1) % trainer.log_every_n_steps == 0 or trainer.should_stop


def check_shared_arguments(
    num_classes: int, class_names, freeze_backbone_epochs: int, backbone_lr_scale: float, dropout: float
) -> None:
    """One ``model.<key> must ...`` line for a shared argument out of range."""
    if num_classes < 1:
        raise UsageError(f"model.num_classes must be >= 1, got {num_classes}")
    if class_names is not None and len(class_names) != num_classes:
        raise UsageError(f"model.class_names has {len(class_names)} names but num_classes is {num_classes}")
    if freeze_backbone_epochs < 0:
        raise UsageError(f"model.freeze_backbone_epochs must be >= 0, got {freeze_backbone_epochs}")
    if not backbone_lr_scale > 0:
        raise UsageError(f"model.backbone_lr_scale must be > 0, got {backbone_lr_scale}")
    if not 0 <= dropout < 1:
        raise UsageError(f"model.dropout must be in [0, 1), got {dropout}")
