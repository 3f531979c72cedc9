"""The task: a LightningModule that owns the loss, the metrics and the optimiser, and no layer code."""

from __future__ import annotations

import functools
import inspect
from typing import Literal

import lightning as L
import torch
from lightning.pytorch.cli import LRSchedulerCallable, OptimizerCallable
from lightning.pytorch.utilities import rank_zero_info
from torch import nn
from torch.optim.lr_scheduler import OneCycleLR, ReduceLROnPlateau
from torchmetrics import MeanMetric

from litstarter.callbacks.freeze_backbone import FreezeBackbone
from litstarter.data.base import stored_image_size
from litstarter.metrics import classification_metrics, scalar_metrics, split_confusion_matrix
from litstarter.models import check_weights, create_backbone, list_backbones
from litstarter.models.classifier import architecture_of, build_classifier
from litstarter.models.transfer import COMPILED_PREFIX, TransferReport, load_matching_weights
from litstarter.optim import split_groups_by_module, total_grad_norm, weight_decay_groups

# ReduceLROnPlateau is stepped once per epoch, after validation, on this metric.
PLATEAU_MONITOR = "val/loss"
# The registry is the one list of backbones: configs are checked against it and --help shows it.
BackboneName = Literal[tuple(list_backbones())]


def _default_optimizer(params) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=3e-3, weight_decay=0.05)


def _default_scheduler(optimizer: torch.optim.Optimizer, total_steps: int | None = None):
    from litstarter.optim import WarmupCosineLR

    return WarmupCosineLR(optimizer, warmup_steps=0.05, total_steps=total_steps)


#: Train-metric updates are batched over this many steps (see ``ImageClassifier._update_train_metrics``).
TRAIN_METRICS_EVERY = 50


class ImageClassifier(L.LightningModule):
    """Image classification with cross-entropy on logits.

    Args:
        backbone: Registered backbone name (``litstarter.models.list_backbones()``); ``configs/model/<name>.yaml``
            selects one.
        num_classes: Number of classes; the CLI links it from ``data.num_classes``.
        in_channels: Image channels; the CLI links it from ``data.channels``.
        image_size: Input ``[height, width]``; linked from ``data.image_size`` and recorded for export.
        class_names: Class names in label order; linked from ``data.class_names`` so predictions can print them.
        cache_size: ``[height, width]`` the data module stores images at before the eval view centre-crops
            ``image_size`` (linked from the data module; recorded so inference on files resizes exactly as
            training did). ``null`` means ``image_size``.
        backbone_kwargs: Extra arguments for the backbone factory (e.g. ``widths`` for ``small_cnn``).
        weights: Pretrained backbone weights: ``null`` (random init), a torchvision weights name such as
            ``IMAGENET1K_V1`` or ``DEFAULT`` (downloaded to ``torch.hub.get_dir()/checkpoints`` on first use), or a
            path to a state_dict file. Other channel counts than 3 adapt the stem. Loaded when a fit starts
            (not when resuming, nor by ``load_from_checkpoint``: the checkpoint holds the trained weights).
        init_from: A checkpoint of ours, an exported ``weights.pt`` or a backbone state_dict to start from: every
            tensor that fits loads (after ``weights``); the head is replaced when the classes differ. Nothing of the
            backbone fitting is an error. Applied when a fit starts, like ``weights``.
        freeze_backbone_epochs: Train only the head for this many epochs first; the backbone is frozen in eval
            mode (batch-norm statistics fixed), then trains at ``backbone_lr_scale`` x the learning rate.
        backbone_lr_scale: The backbone's learning rate as a fraction of the head's (e.g. 0.1 when fine-tuning):
            its parameters get their own groups, followed by the schedule and logged as ``lr-<optimizer>/backbone``.
        dropout: Dropout before the linear head.
        optimizer: Optimiser factory; ``null``: AdamW (lr 3e-3, weight decay 0.05). It receives parameter groups (see
            ``no_decay_norm_and_bias``); its own ``weight_decay`` applies to the first group.
        lr_scheduler: Scheduler factory, stepped every optimiser step; ``null``: linear warmup (5%) then cosine.
            A ``total_steps`` argument left unset is filled from ``trainer.estimated_stepping_batches``.
            ``ReduceLROnPlateau`` is stepped once per epoch instead, after validation, on ``val/loss``.
        label_smoothing: Cross-entropy label smoothing in [0, 1).
        class_weights: Cross-entropy weight per class: ``auto`` (inverse class frequency of the data module's
            train split, computed when fitting starts and saved in checkpoints), a list of ``num_classes``
            weights, or ``null`` (unweighted). A loss-side alternative to ``data.sampler``.
        no_decay_norm_and_bias: Exempt norm-layer parameters and biases from weight decay (it only pulls
            them away from their neutral values); ``false`` decays every parameter.
        gradient_checkpointing: Recompute the backbone's activations block by block in backward instead of
            storing them: less memory for about one more forward pass. The backbone must implement
            ``set_grad_checkpointing`` (``small_cnn`` does; see its docstring for the dropout and
            batch-norm caveats).
        channels_last: Keep the network and its inputs in NHWC memory layout: faster convolutions on
            tensor-core GPUs under AMP (and with oneDNN on recent CPUs). Results are unchanged.
        compile: ``torch.compile`` the backbone when fitting starts (``true``, or a dict of
            ``torch.compile`` arguments such as ``{mode: max-autotune}``); undone when fitting ends.
            Checkpoints are saved without the compiler's ``_orig_mod.`` key prefix, so they load uncompiled.
        scale_lr_with_batch: Scale the optimiser's learning rate with the effective global batch
            (per-device batch x devices x nodes x accumulation) relative to ``reference_batch_size``:
            ``linear`` (x global/reference), ``sqrt`` (x its square root, gentler; often better for Adam),
            or ``none``.
        reference_batch_size: The global batch the configured learning rate was tuned for (64: the default
            config on one device).
    """

    # Read by ThroughputMonitor each step; None: FLOPs not measured (it then logs samples/s, no MFU).
    flops_per_batch: int | None = None

    def __init__(
        self,
        backbone: BackboneName = "small_cnn",
        num_classes: int = 10,
        in_channels: int = 3,
        image_size: tuple[int, int] = (224, 224),
        class_names: list[str] | None = None,
        cache_size: tuple[int, int] | None = None,
        backbone_kwargs: dict | None = None,
        weights: str | None = None,
        init_from: str | None = None,
        freeze_backbone_epochs: int = 0,
        backbone_lr_scale: float = 1.0,
        dropout: float = 0.0,
        optimizer: OptimizerCallable | None = None,
        lr_scheduler: LRSchedulerCallable | None = None,
        label_smoothing: float = 0.0,
        class_weights: Literal["auto"] | list[float] | None = None,
        no_decay_norm_and_bias: bool = True,
        gradient_checkpointing: bool = False,
        channels_last: bool = False,
        compile: bool | dict = False,
        scale_lr_with_batch: Literal["none", "linear", "sqrt"] = "none",
        reference_batch_size: int = 64,
    ) -> None:
        super().__init__()
        if num_classes < 2:
            raise ValueError(f"model.num_classes must be >= 2, got {num_classes}")
        if class_names is not None and len(class_names) != num_classes:
            raise ValueError(f"model.class_names has {len(class_names)} names but num_classes is {num_classes}")
        if not 0 <= label_smoothing < 1:
            raise ValueError(f"model.label_smoothing must be in [0, 1), got {label_smoothing}")
        if isinstance(class_weights, str) and class_weights != "auto":
            raise ValueError(f"model.class_weights must be 'auto', a list of weights or null, got {class_weights!r}")
        if isinstance(class_weights, (list, tuple)) and (len(class_weights) != num_classes or min(class_weights) <= 0):
            raise ValueError(
                f"model.class_weights must be {num_classes} positive numbers (one per class), got {class_weights}"
            )
        if freeze_backbone_epochs < 0:
            raise ValueError(f"model.freeze_backbone_epochs must be >= 0, got {freeze_backbone_epochs}")
        if not backbone_lr_scale > 0:
            raise ValueError(f"model.backbone_lr_scale must be > 0, got {backbone_lr_scale}")
        if reference_batch_size < 1:
            raise ValueError(f"model.reference_batch_size must be >= 1, got {reference_batch_size}")
        self.save_hyperparameters()
        self.class_names = list(class_names) if class_names else [str(i) for i in range(num_classes)]
        # Defaults as None, not as functions: hparams then hold no pickled function, so a checkpoint made
        # from plain Python still loads with weights_only=True.
        self.optimizer = optimizer or _default_optimizer
        self.lr_scheduler = lr_scheduler or _default_scheduler
        # The same build as a checkpoint's rebuild; mean/std are placeholders until setup() copies the data's.
        self.net = build_classifier(architecture_of(self.hparams))
        try:  # a weights name is checked now; files are read when fitting starts
            check_weights(backbone, weights)
        except ValueError as err:
            raise ValueError(f"model.weights: {err}") from None
        if gradient_checkpointing:
            if not hasattr(self.net.backbone, "set_grad_checkpointing"):
                raise ValueError(
                    f"model.gradient_checkpointing=true but backbone {backbone!r} has no set_grad_checkpointing()"
                )
            self.net.backbone.set_grad_checkpointing(True)
        if channels_last:
            self.net.to(memory_format=torch.channels_last)
        # The weight is a buffer of the loss module, so checkpoints carry it (also the `auto` one from setup).
        weight = None
        if class_weights is not None:
            weight = torch.ones(num_classes) if class_weights == "auto" else torch.tensor(class_weights).float()
        self.criterion = nn.CrossEntropyLoss(weight=weight, label_smoothing=label_smoothing)
        # One metric object per stage: sharing one would mix train and val state.
        self.train_metrics = classification_metrics(num_classes, "train")
        self.val_metrics = classification_metrics(num_classes, "val")
        self.test_metrics = classification_metrics(num_classes, "test")
        self.train_loss = MeanMetric()
        self._train_predictions: list[torch.Tensor] = []  # (2, B) argmax and labels, not yet in train_metrics
        # What init_from loaded, once a fit has started (see load_initial_weights).
        self.init_report: TransferReport | None = None
        # The last computed (K, K) confusion matrix per stage, for the PlotConfusionMatrix callback.
        self.confusion_matrices: dict[str, torch.Tensor] = {}

    def setup(self, stage: str) -> None:
        """Before fitting, take the normalisation statistics from the data module (its train split)."""
        datamodule = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if stage == "fit" and datamodule is not None and hasattr(datamodule, "normalization"):
            # Overwritten again by a checkpoint's buffers when resuming; that is the right order.
            self.net.set_normalization(*datamodule.normalization())
        if stage == "fit" and hasattr(datamodule, "image_size") and self.hparams.get("cache_size") is None:
            # Built outside the CLI (which links it): record the size the data stores images at, for infer.
            self.hparams.cache_size = stored_image_size(datamodule)
        if stage == "fit" and self.hparams.get("class_weights") == "auto":
            if datamodule is None or not hasattr(datamodule, "class_counts"):
                raise ValueError("model.class_weights=auto needs a data module with class_counts()")
            self.criterion.weight.copy_(inverse_frequency_weights(datamodule.class_counts(), self.class_names))

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
        """Loss on one batch; accuracy accumulates over the epoch."""
        loss, logits = self._shared_step(batch)
        self._train_predictions.append(torch.stack([logits.detach().argmax(dim=-1), batch[1].long()]))  # (2, B)
        if len(self._train_predictions) >= TRAIN_METRICS_EVERY:
            self._update_train_metrics()
        # Per step: this rank's value, no synchronisation. Per epoch: a torchmetrics mean, reduced across
        # processes once at the epoch's end.
        self.log("train/loss_step", loss, on_step=True, on_epoch=False, prog_bar=True)
        self.train_loss.update(loss.detach())
        return loss

    def on_train_epoch_end(self) -> None:
        """Log and reset the epoch's train metrics (synchronised across processes by torchmetrics)."""
        self._update_train_metrics()
        self.log_dict(self.train_metrics.compute())
        self.log("train/loss_epoch", self.train_loss.compute())
        self.train_metrics.reset()
        self.train_loss.reset()

    def on_train_epoch_start(self) -> None:
        """Drop predictions left over from an epoch that ended early (``max_steps``, an interruption)."""
        self._train_predictions.clear()

    def _update_train_metrics(self) -> None:
        """Feed the buffered train predictions to the train metrics in one update.

        torchmetrics' update costs about as much for 64 samples as for 3,200 (argument checks, dispatch), so
        the training step keeps only its ``(2, B)`` argmax and labels, and the metrics see every sample
        exactly once, in batches of up to :data:`TRAIN_METRICS_EVERY` steps: the epoch's ``train/acc`` and
        ``train/f1_macro`` are the same as with an update per step.
        """
        if self._train_predictions:
            preds, labels = torch.cat(self._train_predictions, dim=1)
            self._train_predictions.clear()
            self.train_metrics.update(preds, labels)

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        """Log the global gradient norm before clipping (Lightning clips right after this hook; AMP has
        already unscaled). Rising spikes here come before a loss that goes NaN.

        Only on the steps whose metrics reach the logger (every ``trainer.log_every_n_steps``), the test the
        stock LearningRateMonitor and ThroughputMonitor use: the norm is a pass over every gradient.
        """
        connector = getattr(self.trainer, "_logger_connector", None)
        if connector is not None and not connector.should_update_logs:
            return
        self.log("train/grad_norm", total_grad_norm(self.parameters()), on_step=True, on_epoch=False)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Accumulate val loss and metrics; logged once per epoch."""
        loss, logits = self._shared_step(batch)
        self.val_metrics.update(logits.float().softmax(dim=-1), batch[1])  # float: bf16 blurs AUROC/ECE
        # Epoch-level only: Lightning averages over the epoch and reduces across processes once, at its end.
        self.log("val/loss", loss, on_step=False, on_epoch=True, prog_bar=True, sync_dist=True)

    def on_validation_epoch_end(self) -> None:
        """Log and reset the epoch's val metrics (torchmetrics syncs them across processes)."""
        self._log_epoch_metrics(self.val_metrics, "val", progress_bar=("val/acc", "val/f1_macro"))

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Accumulate test loss and metrics."""
        loss, logits = self._shared_step(batch)
        self.test_metrics.update(logits.float().softmax(dim=-1), batch[1])
        self.log("test/loss", loss, on_step=False, on_epoch=True, sync_dist=True)

    def on_test_epoch_end(self) -> None:
        """Log and reset the test metrics."""
        self._log_epoch_metrics(self.test_metrics, "test")

    def _log_epoch_metrics(self, metrics, stage: str, progress_bar: tuple[str, ...] = ()) -> None:
        """Compute (synchronised across processes), keep the confusion matrix, log the scalars, reset."""
        values, matrix = split_confusion_matrix(metrics.compute())
        metrics.reset()
        if matrix is not None:
            self.confusion_matrices[stage] = matrix.cpu()
        scalars = scalar_metrics(values, self.class_names)
        self.log_dict({k: v for k, v in scalars.items() if k in progress_bar}, prog_bar=True)
        self.log_dict({k: v for k, v in scalars.items() if k not in progress_bar})

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """Class probabilities ``(B, K)``."""
        images = batch[0] if isinstance(batch, (tuple, list)) else batch
        return self(images).softmax(dim=-1)

    def configure_callbacks(self) -> list:
        """:class:`FreezeBackbone` while ``freeze_backbone_epochs`` > 0."""
        epochs = self.hparams.get("freeze_backbone_epochs", 0)
        return [FreezeBackbone(epochs)] if epochs else []

    def load_initial_weights(self) -> TransferReport | None:
        """Load ``weights`` into the backbone, then ``init_from`` into the network; returns the ``init_from`` report.

        Called when a fit starts without ``ckpt_path``; call it yourself to use the model outside a fit. The
        report is also kept as ``self.init_report``.
        """
        hparams = self.hparams
        if hparams.get("weights") is not None:
            pretrained = create_backbone(
                hparams.backbone,
                in_channels=hparams.in_channels,
                weights=hparams.weights,
                image_size=hparams.get("image_size"),
                **(hparams.get("backbone_kwargs") or {}),
            )
            self.net.backbone.load_state_dict(pretrained.state_dict())  # the factory logged what it loaded
        if hparams.get("init_from") is None:
            return None
        report = load_matching_weights(self.net, hparams.init_from, self.class_names)
        rank_zero_info(report.summary())
        self.init_report = report
        return report

    def on_fit_start(self) -> None:
        """Load ``weights``/``init_from`` (unless resuming: the checkpoint has the weights), then ``torch.compile``
        the backbone, if asked (after a checkpoint was restored into the plain one)."""
        if self.trainer.ckpt_path is None:
            self.load_initial_weights()
        compile_args = self.hparams.get("compile")
        if compile_args and not hasattr(self.net.backbone, "_orig_mod"):
            kwargs = compile_args if isinstance(compile_args, dict) else {}
            self.net.backbone = torch.compile(self.net.backbone, **kwargs)

    def on_fit_end(self) -> None:
        """Undo ``compile``: testing, export and later fits get the plain backbone (same parameters)."""
        if hasattr(self.net.backbone, "_orig_mod"):
            self.net.backbone = self.net.backbone._orig_mod

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Save weights under their uncompiled names, so a compiled run's checkpoint loads anywhere."""
        checkpoint["state_dict"] = {k.replace(COMPILED_PREFIX, ""): v for k, v in checkpoint["state_dict"].items()}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """Match the checkpoint's keys to this model, compiled or not, whichever way the checkpoint was saved."""
        own = {k.replace(COMPILED_PREFIX, ""): k for k in self.state_dict()}
        state = checkpoint["state_dict"]
        checkpoint["state_dict"] = {
            own.get(k.replace(COMPILED_PREFIX, ""), k.replace(COMPILED_PREFIX, "")): v for k, v in state.items()
        }

    def configure_optimizers(self):
        """Optimiser from ``optimizer`` over parameter groups; ``lr_scheduler`` stepped every optimiser step
        (``ReduceLROnPlateau``: every epoch, after validation, on ``val/loss``)."""
        params = weight_decay_groups(self) if self.hparams.get("no_decay_norm_and_bias", True) else self.parameters()
        lr_scale = self.hparams.get("backbone_lr_scale", 1.0)
        if lr_scale != 1.0:
            params = split_groups_by_module(list(_as_groups(params)), self.net.backbone, "backbone", rest="head")
        optimizer = self.optimizer(params)
        for group in optimizer.param_groups:  # before the scheduler, which takes each group's lr as its base
            if group.get("name", "").startswith("backbone"):
                group["lr"] *= lr_scale
        self._scale_lr(optimizer, self.batch_plan())
        scheduler = self._build_scheduler(optimizer)
        if isinstance(scheduler, ReduceLROnPlateau):
            config = {"scheduler": scheduler, "interval": "epoch", "monitor": PLATEAU_MONITOR}
        else:
            config = {"scheduler": scheduler, "interval": "step"}
        return {"optimizer": optimizer, "lr_scheduler": config}

    def batch_plan(self) -> dict[str, int]:
        """World size, nodes, devices, per-device batch, accumulation and the effective global batch."""
        trainer = self.trainer
        per_device = getattr(trainer.datamodule, "batch_size", None) if trainer.datamodule is not None else None
        plan = {
            "world_size": trainer.world_size,
            "num_nodes": trainer.num_nodes,
            "devices": trainer.num_devices,
            "per_device_batch": int(per_device or 0),
            "accumulate_grad_batches": trainer.accumulate_grad_batches,
        }
        plan["global_batch"] = plan["per_device_batch"] * plan["world_size"] * plan["accumulate_grad_batches"]
        return plan

    def _scale_lr(self, optimizer: torch.optim.Optimizer, plan: dict[str, int]) -> None:
        """Print the batch plan; scale every group's learning rate per ``scale_lr_with_batch``."""
        mode = self.hparams.get("scale_lr_with_batch", "none")
        reference = self.hparams.get("reference_batch_size", 64)
        factor = 1.0
        if mode != "none" and plan["global_batch"] > 0:
            ratio = plan["global_batch"] / reference
            factor = ratio if mode == "linear" else ratio**0.5
        for group in optimizer.param_groups:
            group["lr"] *= factor
        rank_zero_info(
            f"batch plan: world size {plan['world_size']} = {plan['num_nodes']} node(s) x {plan['devices']} device(s); "
            f"per-device batch {plan['per_device_batch']} x accumulation {plan['accumulate_grad_batches']} "
            f"-> effective global batch {plan['global_batch']}"
        )
        if mode != "none":
            rank_zero_info(
                f"scale_lr_with_batch={mode}: lr x {factor:.4g} (global batch {plan['global_batch']} vs reference "
                f"{reference}) -> lr {optimizer.param_groups[0]['lr']:.4g}"
            )

    def _build_scheduler(self, optimizer: torch.optim.Optimizer):
        """Call ``lr_scheduler``, filling an unset ``total_steps`` from the Trainer's estimate."""
        kwargs = {}
        if _accepts_unset_total_steps(self.lr_scheduler):
            kwargs["total_steps"] = int(self.trainer.estimated_stepping_batches)
        max_lr = (getattr(self.lr_scheduler, "keywords", None) or {}).get("max_lr")
        if _factory_class(self.lr_scheduler) is OneCycleLR and isinstance(max_lr, (int, float)):
            # OneCycleLR overwrites every group's lr from one max_lr; keep the groups' ratios (backbone_lr_scale,
            # scale_lr_with_batch) by giving each group max_lr x its lr / the optimiser's configured lr.
            base = optimizer.defaults["lr"]
            kwargs["max_lr"] = [max_lr * group["lr"] / base for group in optimizer.param_groups]
        return self.lr_scheduler(optimizer, **kwargs)


def batch_size(batch: tuple[torch.Tensor, torch.Tensor] | torch.Tensor) -> int:
    """Samples in an ``(images, labels)`` batch or an images-only one; ``ThroughputMonitor``'s ``batch_size_fn``."""
    return len(batch[0] if isinstance(batch, (tuple, list)) else batch)


def inverse_frequency_weights(counts, class_names: list[str]) -> torch.Tensor:
    """``total / (K * count)`` per class: 1 for every class when balanced, larger for rarer classes."""
    counts = torch.as_tensor(counts, dtype=torch.float64)
    if len(counts) != len(class_names) or (counts == 0).any():
        missing = [name for name, n in zip(class_names, counts.tolist(), strict=False) if n == 0]
        raise ValueError(f"model.class_weights=auto: no training samples for classes {missing} ({counts.tolist()})")
    return (counts.sum() / (len(counts) * counts)).float()


def _as_groups(params) -> list[dict]:
    """Parameter groups from what an optimiser accepts: groups as they are, bare parameters as one group."""
    params = list(params)
    return params if params and isinstance(params[0], dict) else [{"params": params}]


def _accepts_unset_total_steps(factory) -> bool:
    """True if ``factory`` takes a ``total_steps`` argument that was not given a value.

    LightningCLI hands us ``functools.partial(instantiator, SchedulerClass, **init_args)``; a plain
    function or class works too.
    """
    given = getattr(factory, "keywords", None) or {}
    if given.get("total_steps") is not None:
        return False
    try:
        return "total_steps" in inspect.signature(_factory_class(factory)).parameters
    except (TypeError, ValueError):
        return False


def _factory_class(factory):
    """The class (or function) behind LightningCLI's ``partial(instantiator, SchedulerClass, **init_args)``."""
    target = factory
    while isinstance(target, functools.partial):
        classes = [a for a in target.args if inspect.isclass(a)]
        target = classes[0] if classes else target.func
    return target
