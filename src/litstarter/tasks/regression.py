"""Image regression: one or more numbers per image (an age, a count, a score), ``configs/task/regression.yaml``.

* Targets are standardised on the train split: the network learns ``(y - mean) / std`` per target, and the mean
  and std are buffers (``target_mean``, ``target_std``) that checkpoints and ``model.json`` carry; predictions,
  metrics, ``infer`` and ``serve`` are in the targets' own units.
* Loss: ``mse`` or ``huber`` (``huber_delta`` in standard deviations) on the standardised values.
* Metrics (torchmetrics, on the values): ``mae``, ``rmse`` and ``r2`` (averaged over the targets; with several
  targets ``mae/<target>`` too). ``val/select`` is minus the MAE, ties broken by the lower loss.
* Baselines after the test: a mean predictor and ridge regression on the raw pixels (``test/baseline_*``).

``litstarter new --task regression`` copies this file into a project as its ``task.py``; from then on the copy is
the project's to edit (its loss, its steps, its metrics), and it imports public names of ``litstarter`` only
(``docs/api.md``), which change only with the library's major version.
"""

from __future__ import annotations

from typing import Literal

import torch
from lightning.pytorch.utilities import rank_zero_info
from torch import nn
from torchmetrics import MeanAbsoluteError, MeanSquaredError, MetricCollection, R2Score

from litstarter.baseline import add_regression_baselines
from litstarter.errors import UsageError
from litstarter.metrics import selection_score
from litstarter.tasks import ImageTask


class ImageRegressor(ImageTask):
    """Image regression: the network's outputs are the targets' values, one per target column.

    Takes :class:`~litstarter.tasks.ImageTask`'s arguments too (``--help`` lists them); ``num_classes`` and
    ``class_names`` are the number and names of the targets (linked from the data).

    Args:
        loss: ``mse`` (mean squared error) or ``huber`` (quadratic within ``huber_delta``, linear beyond: less
            pulled by outliers), on standardised targets.
        huber_delta: Where ``huber`` turns linear, in standard deviations of the target.
        kwargs: The shared arguments of :class:`~litstarter.tasks.ImageTask`.
    """

    task_name = "regression"
    target_kind = "value"
    task_config = "configs/task/regression.yaml"
    #: After the test after fit, a mean predictor and ridge regression on the raw pixels score the same split.
    baseline = staticmethod(add_regression_baselines)

    def __init__(self, loss: Literal["mse", "huber"] = "mse", huber_delta: float = 1.0, **kwargs) -> None:
        super().__init__(**kwargs)
        if loss not in ("mse", "huber"):
            raise UsageError(f"model.loss must be 'mse' or 'huber', got {loss!r}")
        if not huber_delta > 0:
            raise UsageError(f"model.huber_delta must be > 0, got {huber_delta}")
        k = self.hparams.num_classes
        self.criterion = nn.MSELoss() if loss == "mse" else nn.HuberLoss(delta=huber_delta)
        # Placeholders until setup() reads the train split; checkpoints carry the values used.
        self.register_buffer("target_mean", torch.zeros(k))
        self.register_buffer("target_std", torch.ones(k))
        self.train_metrics = regression_metrics("train")
        self.val_metrics = regression_metrics("val")
        self.test_metrics = regression_metrics("test")

    def setup(self, stage: str) -> None:
        """The shared setup, then the train split's per-target mean and std (not on resume: the checkpoint's)."""
        super().setup(stage)
        datamodule = self.trainer.datamodule
        if stage != "fit" or datamodule is None or self.trainer.ckpt_path is not None:
            return
        targets = torch.as_tensor(datamodule.train_set.targets, dtype=torch.float64).reshape(-1, len(self.target_mean))
        mean, std = targets.mean(0), targets.std(0, correction=0)
        self.target_mean.copy_(mean)
        self.target_std.copy_(torch.where(std > 0, std, torch.ones_like(std)))  # a constant target: std 1
        names = ", ".join(f"{n} {m:.4g} +- {s:.4g}" for n, m, s in zip(self.class_names, mean, std, strict=True))
        rank_zero_info(f"model: targets standardised on the train split: {names}")

    def answers_state(self) -> dict:
        """The standardisation, which ``model.json`` needs to turn the graph's outputs into values."""
        return {"target_mean": self.target_mean.tolist(), "target_std": self.target_std.tolist()}

    def values(self, outputs: torch.Tensor) -> torch.Tensor:
        """The network's standardised ``(B, K)`` outputs in the targets' units."""
        return outputs.float() * self.target_std + self.target_mean

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """``mse`` or ``huber`` between the ``(B, K)`` standardised outputs and the targets, standardised."""
        return self.criterion(outputs, (targets - self.target_mean) / self.target_std)

    def _step(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        images, targets = batch  # (B, C, H, W) uint8, (B, K) float32
        outputs = self(images).float()
        targets = targets.float().reshape(outputs.shape)
        return self.loss(outputs, targets), self.values(outputs), targets

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """The loss on standardised targets; MAE, RMSE and R² accumulate over the epoch, on the values."""
        loss, values, targets = self._step(batch)
        self.train_metrics.update(values.detach(), targets)
        self.log_train_loss(loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Accumulate val loss and metrics; logged once per epoch."""
        loss, values, targets = self._step(batch)
        self.val_metrics.update(values, targets)
        self.val_loss.update(loss.detach(), weight=len(targets))

    def on_validation_epoch_end(self) -> None:
        """Log the val metrics and ``val/select`` (minus the MAE: higher is better, as every task's)."""
        loss = self.val_loss.compute()
        self.val_loss.reset()
        scalars = self.val_metrics.compute()
        self.val_metrics.reset()
        mae = scalars.pop("val/mae")
        self.log("val/loss", loss, prog_bar=True)
        self.log("val/mae", mae, prog_bar=True)
        self.log_dict(scalars)
        self.log("val/select", selection_score(-mae, loss))

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Accumulate the test metrics (per target too, with several)."""
        loss, values, targets = self._step(batch)
        self.test_metrics.update(values, targets)
        self.log("test/loss", loss, on_step=False, on_epoch=True, sync_dist=True)
        for i, name in enumerate(self.class_names if len(self.class_names) > 1 else []):
            self.log(f"test/mae/{name}", (values[:, i] - targets[:, i]).abs().mean(), on_epoch=True, sync_dist=True)

    def on_test_epoch_end(self) -> None:
        """Log and reset the test metrics."""
        self.log_dict(self.test_metrics.compute())
        self.test_metrics.reset()

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """The values ``(B, K)``, in the targets' units."""
        images = batch[0] if isinstance(batch, (tuple, list)) else batch
        return self.values(self(images))


def regression_metrics(stage: str) -> MetricCollection:
    """MAE, RMSE and R² (averaged over the targets) for one stage, keys ``<stage>/<name>``."""
    metrics = {
        "mae": MeanAbsoluteError(),
        "rmse": MeanSquaredError(squared=False),
        "r2": R2Score(multioutput="uniform_average"),
    }
    return MetricCollection(metrics, prefix=f"{stage}/")
