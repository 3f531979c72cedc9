"""The task: a LightningModule that owns the loss, the metrics and the optimiser, and no layer code."""

from __future__ import annotations

from typing import Literal

import lightning as L
import torch
from lightning.pytorch.cli import LRSchedulerCallable, OptimizerCallable
from lightning.pytorch.utilities import rank_zero_info
from torchmetrics import MeanMetric

from litstarter import optim
from litstarter._engine.batch_mix import BatchMix
from litstarter._engine.batch_plan import ScaleMode, batch_plan, scale_lr
from litstarter._engine.checkpoints import compile_child, match_keys, uncompile_child, uncompiled_keys
from litstarter._engine.errors import UsageError
from litstarter._engine.init_from import TransferReport, load_matching_weights
from litstarter._engine.schedulers import build_scheduler
from litstarter._engine.tta import TTAView, check_tta, tta_logits
from litstarter.callbacks.freeze_backbone import FreezeBackbone
from litstarter.losses import ClassWeights, cross_entropy, inverse_frequency_weights
from litstarter.metrics import classification_metrics, scalar_metrics, selection_score, split_confusion_matrix
from litstarter.models import check_weights, create_backbone, list_backbones
from litstarter.models.classifier import architecture_of, build_classifier

# ReduceLROnPlateau is stepped once per epoch, after validation, on this metric.
PLATEAU_MONITOR = "val/loss"
# The registry is the one list of named backbones: --help shows it. Any other string is a class path of your own.
BackboneName = Literal[tuple(list_backbones())]
#: The tasks, named by the data (``data.task``, linked into ``model.task``): ``single_label`` is this module's class;
#: each other task module adds its class here (``multilabel_task.py``; docs/make_it_yours.md, "Adding your own task").
TASKS: dict[str, type] = {}
Task = Literal["single_label", "multilabel"]


class ChosenByTask:
    """``ImageClassifier(task=...)`` builds the class its task module put in :data:`TASKS` (a base class of its own:
    the config parser then reads ``ImageClassifier.__init__``'s arguments, not these)."""

    def __new__(cls, *args, task: str = "single_label", **kwargs):
        if cls is ImageClassifier and task != "single_label":
            if task not in TASKS:
                raise UsageError(f"model.task {task!r} has no task module imported; known: {sorted(TASKS)}")
            cls = TASKS[task]
        return super().__new__(cls)


class ImageClassifier(ChosenByTask, L.LightningModule):
    """Image classification with cross-entropy on logits.

    Args:
        backbone: A registered name (``litstarter.models.list_backbones()``; ``configs/model/<name>.yaml`` selects
            one), ``timm/<name>`` (any timm model, with the ``[timm]`` extra) or the class path of your own
            ``nn.Module`` meeting the contract in ``litstarter.models.registry``.
        num_classes: Number of classes; linked from ``data.num_classes``.
        in_channels: Image channels; linked from ``data.channels``.
        image_size: Input ``[height, width]``; linked from ``data.image_size`` and recorded for export.
        class_names: Class names in label order; linked from ``data.class_names``.
        resize_size: ``[height, width]`` the data stores images at before the eval view centre-crops ``image_size``
            (linked; recorded so inference on files resizes as training did); ``null``: ``image_size``.
        interpolation: The filter the data resized with, ``bilinear`` or ``bicubic`` (linked; recorded, as above).
        backbone_kwargs: Extra arguments for the backbone factory (e.g. ``widths`` for ``small_cnn``).
        weights: Pretrained backbone weights: ``null`` (random init), a torchvision weights name (``IMAGENET1K_V1``,
            ``DEFAULT``; downloaded to ``torch.hub.get_dir()/checkpoints`` once), ``pretrained`` (timm's, through the
            Hugging Face hub cache), or a state_dict file. Loaded when a
            fit starts (not on resume, nor by ``load_from_checkpoint``); another channel count adapts the stem.
        init_from: A checkpoint of ours, an exported ``weights.pt`` or a backbone state_dict to start from, after
            ``weights``: every tensor that fits loads, the head is replaced when the classes differ.
        freeze_backbone_epochs: Train only the head for this many epochs first (backbone frozen in eval mode).
        backbone_lr_scale: The backbone's learning rate as a fraction of the head's (e.g. 0.1 when fine-tuning),
            in parameter groups of its own, logged as ``lr-<optimizer>/backbone``.
        layer_decay: Layer-wise learning-rate decay (e.g. 0.75): each backbone layer trains at this factor of the
            rate of the layer above it, the head at the full rate (timm/<name> backbones; ``null``: off).
        dropout: Dropout before the linear head.
        optimizer: Optimiser factory over the parameter groups; ``null``: AdamW (lr 3e-3, weight decay 0.05).
        lr_scheduler: Scheduler factory, stepped every optimiser step (``ReduceLROnPlateau``: every epoch, on
            ``val/loss``); an unset ``total_steps`` is filled in from the Trainer. ``null``: 5% warmup, then cosine.
        label_smoothing: Cross-entropy label smoothing in [0, 1).
        class_weights: Cross-entropy weight per class: ``auto`` (inverse class frequency of the train split, saved
            in checkpoints), ``num_classes`` weights, or ``null``. A loss-side alternative to ``data.sampler``.
        no_decay_norm_and_bias: Exempt norm-layer parameters and biases from weight decay.
        gradient_checkpointing: Recompute the backbone's activations in backward: less memory for about one more
            forward pass (the backbone must implement ``set_grad_checkpointing``, as ``small_cnn`` does).
        channels_last: NHWC memory layout for the network and its inputs: faster convolutions on tensor cores.
        compile: ``torch.compile`` the backbone while fitting (``true``, or its arguments such as
            ``{mode: max-autotune}``); checkpoints are saved without the compiler's key prefix.
        scale_lr_with_batch: Scale the learning rate with the effective global batch (per-device batch x devices x
            nodes x accumulation) against ``reference_batch_size``: ``linear``, ``sqrt`` (gentler) or ``none``.
        reference_batch_size: The global batch the configured learning rate was tuned for.
        mixup_alpha: MixUp's Beta(alpha, alpha) on training batches (soft targets; train metrics on the dominant label).
        cutmix_alpha: CutMix's; with both set, one of the two per batch (``litstarter._engine.batch_mix``).
        mix_off_after_epoch: Train on unmixed batches from this epoch on; ``null``: mix to the end.
        tta: Test-time views whose probabilities ``test`` and ``predict`` average: ``hflip``, ``crops`` (five shifted
            crops). Off by default: a flip changes the class of text, digits, arrows.
        task: Linked from ``data.task`` (the data decides): ``single_label`` builds this class, ``multilabel`` the
            multi-label task of ``litstarter.multilabel_task`` (sigmoid, binary cross-entropy, tuned thresholds).
        pos_weight: Multi-label only: the positive weight per label of the binary cross-entropy: ``auto``
            (negatives / positives of the train split, saved in checkpoints), one number per label, or ``null``.
        thresholds: Multi-label only: the probability at or above which a label is predicted, one number for
            every label or one per label; ``null``: tuned on the validation split at each validation (the checkpoints
            keep them).
    """

    # Read by ThroughputMonitor each step; None: FLOPs not measured (it then logs samples/s, no MFU).
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
        label_smoothing: float = 0.0,
        class_weights: ClassWeights = None,
        no_decay_norm_and_bias: bool = True,
        gradient_checkpointing: bool = False,
        channels_last: bool = False,
        compile: bool | dict = False,
        scale_lr_with_batch: ScaleMode = "none",
        reference_batch_size: int = 64,
        mixup_alpha: float = 0.0,
        cutmix_alpha: float = 0.0,
        mix_off_after_epoch: int | None = None,
        tta: list[TTAView] | None = None,
        task: Task = "single_label",
        pos_weight: Literal["auto"] | list[float] | None = None,
        thresholds: float | list[float] | None = None,
    ) -> None:
        super().__init__()
        _check_arguments(num_classes, class_names, freeze_backbone_epochs, backbone_lr_scale, reference_batch_size)
        if type(self) is ImageClassifier and (pos_weight is not None or thresholds is not None):
            raise UsageError("model.pos_weight and model.thresholds are for multi-label data (data.task: multilabel)")
        # Evaluation choices, not saved: `test --ckpt_path` takes them from the config (multi-label thresholds: the
        # checkpoint keeps the ones in use as a buffer).
        self.save_hyperparameters(ignore=["tta", "thresholds"])
        self.class_names = list(class_names) if class_names else [str(i) for i in range(num_classes)]
        # Defaults as None, not as functions: hparams then hold no pickled function, so a checkpoint made
        # from plain Python still loads with weights_only=True.
        self.optimizer = optimizer or optim.default_optimizer
        self.lr_scheduler = lr_scheduler or optim.default_scheduler
        # The same build as a checkpoint's rebuild; mean/std are placeholders until setup() copies the data's.
        self.net = build_classifier(architecture_of(self.hparams))
        try:  # a weights name is checked now; files are read when fitting starts
            check_weights(backbone, weights)
        except ValueError as err:
            raise UsageError(f"model.weights: {err}") from None
        self.net.set_memory_options(gradient_checkpointing=gradient_checkpointing, channels_last=channels_last)
        self.criterion = cross_entropy(num_classes, class_weights, label_smoothing)  # takes soft targets too
        mixing = mixup_alpha or cutmix_alpha
        self.batch_mix = BatchMix(num_classes, mixup_alpha, cutmix_alpha, mix_off_after_epoch) if mixing else None
        self.tta = check_tta(tta)
        # One metric object per stage: sharing one would mix train and val state.
        self.train_metrics = classification_metrics(num_classes, "train")
        self.val_metrics = classification_metrics(num_classes, "val")
        self.test_metrics = classification_metrics(num_classes, "test")
        self.train_loss, self.val_loss = MeanMetric(), MeanMetric()
        self.init_report: TransferReport | None = None  # what init_from loaded, once a fit has started
        self.confusion_matrices: dict[str, torch.Tensor] = {}  # the last (K, K) per stage, for PlotConfusionMatrix

    def setup(self, stage: str) -> None:
        """Before fitting: the data's normalisation (a resume's overwrites it), the size it stores images at (for
        inference on files), and ``auto`` class weights."""
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
        if self.hparams.get("class_weights") == "auto":
            self.criterion.weight.copy_(inverse_frequency_weights(datamodule, self.class_names))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images ``(B, C, H, W)`` in 0..255 -> logits ``(B, num_classes)``."""
        if self.hparams.get("channels_last"):
            x = x.contiguous(memory_format=torch.channels_last)  # uint8: the cheapest moment to reorder
        return self.net(x)

    def _shared_step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = batch  # (B, C, H, W) uint8, (B,) int64
        logits = self(images)  # (B, K)
        return self.criterion(logits, labels), logits

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Loss on one batch (mixed if asked: ``(B, K)`` soft targets); accuracy accumulates over the epoch."""
        images, targets = batch
        if self.batch_mix is not None:
            images, targets = self.batch_mix(images, targets, self.current_epoch, self.global_step, self.global_rank)
        loss, logits = self._shared_step((images, targets))
        labels = targets if targets.ndim == 1 else targets.argmax(dim=-1)  # mixed: the dominant label
        self.train_metrics.update(logits.detach().argmax(dim=-1), labels)
        # Per step this rank's value, unsynchronised; per epoch a torchmetrics mean, reduced once at its end.
        self.log("train/loss_step", loss, on_step=True, on_epoch=False, prog_bar=True)
        self.train_loss.update(loss.detach())
        return loss

    def on_train_epoch_end(self) -> None:
        """Log and reset the epoch's train metrics (synchronised across processes by torchmetrics)."""
        self.log_dict(self.train_metrics.compute())
        self.log("train/loss_epoch", self.train_loss.compute())
        self.train_metrics.reset()
        self.train_loss.reset()

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        """Log the gradient norm before clipping (AMP has unscaled it): rising spikes come before a loss that goes
        NaN. Only on the steps that reach the logger: the norm is a pass over every gradient."""
        if logs_this_step(self.trainer):
            self.log("train/grad_norm", optim.total_grad_norm(self.parameters()), on_step=True, on_epoch=False)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Accumulate val loss and metrics; logged once per epoch (reduced across processes once, at its end)."""
        loss, logits = self._shared_step(batch)
        self.val_metrics.update(logits.float().softmax(dim=-1), batch[1])  # float: bf16 blurs AUROC/ECE
        self.val_loss.update(loss.detach(), weight=len(batch[1]))  # a mean over images, as self.log's would be

    def on_validation_epoch_end(self) -> None:
        """Log and reset the epoch's val metrics (torchmetrics syncs them across processes), and ``val/select``."""
        loss = self.val_loss.compute()
        self.val_loss.reset()
        self.log("val/loss", loss, prog_bar=True)
        scalars = self._log_epoch_metrics(self.val_metrics, "val", progress_bar=("val/acc", "val/f1_macro"))
        self.log("val/select", selection_score(scalars["val/f1_macro"], loss))

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Accumulate test loss and metrics (on the probabilities averaged over ``tta``'s views, if any)."""
        logits = tta_logits(self, batch[0], self.tta) if self.tta else self(batch[0])  # TTA: log mean probability
        loss = self.criterion(logits, batch[1])
        self.test_metrics.update(logits.float().softmax(dim=-1), batch[1])
        self.log("test/loss", loss, on_step=False, on_epoch=True, sync_dist=True)

    def on_test_epoch_end(self) -> None:
        """Log and reset the test metrics."""
        self._log_epoch_metrics(self.test_metrics, "test")

    def _log_epoch_metrics(self, metrics, stage: str, progress_bar: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
        """Compute (synchronised across processes), keep the confusion matrix, log the scalars, reset."""
        values, matrix = split_confusion_matrix(metrics.compute())
        metrics.reset()
        if matrix is not None:
            self.confusion_matrices[stage] = matrix.cpu()
        scalars = scalar_metrics(values, self.class_names)
        self.log_dict({k: v for k, v in scalars.items() if k in progress_bar}, prog_bar=True)
        self.log_dict({k: v for k, v in scalars.items() if k not in progress_bar})
        return scalars

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """Class probabilities ``(B, K)`` (averaged over ``tta``'s views, if any)."""
        images = batch[0] if isinstance(batch, (tuple, list)) else batch
        return (tta_logits(self, images, self.tta) if self.tta else self(images)).softmax(dim=-1)

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
        """Save weights under their uncompiled names, so a compiled run's checkpoint loads anywhere."""
        checkpoint["state_dict"] = uncompiled_keys(checkpoint["state_dict"])

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


def batch_size(batch: tuple[torch.Tensor, torch.Tensor] | torch.Tensor) -> int:
    """Samples in an ``(images, labels)`` batch or an images-only one; ``ThroughputMonitor``'s ``batch_size_fn``."""
    return len(batch[0] if isinstance(batch, (tuple, list)) else batch)


def logs_this_step(trainer: L.Trainer) -> bool:
    """Whether the optimiser step under way reaches the logger: Lightning's own test (every ``log_every_n_steps``-th
    step, and the last), from public attributes (before the step, ``global_step`` counts the steps done)."""
    return (trainer.global_step + 1) % trainer.log_every_n_steps == 0 or trainer.should_stop


def _check_arguments(
    num_classes: int, class_names, freeze_backbone_epochs: int, backbone_lr_scale: float, reference_batch_size: int
) -> None:
    """One ``model.<key> must ...`` line for an argument out of range (the loss checks its own)."""
    if num_classes < 2:
        raise UsageError(f"model.num_classes must be >= 2, got {num_classes}")
    if class_names is not None and len(class_names) != num_classes:
        raise UsageError(f"model.class_names has {len(class_names)} names but num_classes is {num_classes}")
    if freeze_backbone_epochs < 0:
        raise UsageError(f"model.freeze_backbone_epochs must be >= 0, got {freeze_backbone_epochs}")
    if not backbone_lr_scale > 0:
        raise UsageError(f"model.backbone_lr_scale must be > 0, got {backbone_lr_scale}")
    if reference_batch_size < 1:
        raise UsageError(f"model.reference_batch_size must be >= 1, got {reference_batch_size}")
