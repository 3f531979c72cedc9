"""The linear baseline: raw pixels averaged down, a capped fit, and a line only when the network is not clearly
better."""

from __future__ import annotations

import numpy as np

from litstarter.baseline import Baseline, fit_linear_baseline, pixels, verdict


def two_brightness_classes(n: int, size: tuple[int, int], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Class 0 dark, class 1 bright, with noise: a linear model separates them."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    base = np.where(labels[:, None, None, None] == 1, 170, 80)
    images = np.clip(base + rng.normal(0, 25, (n, 3, *size)), 0, 255).astype(np.uint8)
    return images, labels


def test_pixels_are_averaged_down_to_at_most_16_a_side_and_never_up() -> None:
    assert pixels(np.zeros((5, 3, 40, 30), np.uint8)).shape == (5, 3 * 16 * 16)
    small = np.full((2, 1, 8, 8), 255, np.uint8)
    assert pixels(small).shape == (2, 64) and np.allclose(pixels(small), 1.0)


def test_the_baseline_fits_on_a_capped_seeded_draw_and_scores_the_held_out_split() -> None:
    train, test = two_brightness_classes(300, (24, 20)), two_brightness_classes(60, (24, 20), seed=1)
    first = fit_linear_baseline(train, test, num_classes=2, seed=3, max_train=120)
    again = fit_linear_baseline(train, test, num_classes=2, seed=3, max_train=120)
    assert first.train_images == 120 and first.acc >= 0.95 and first.f1_macro >= 0.95
    assert (first.acc, first.f1_macro) == (again.acc, again.f1_macro)
    assert fit_linear_baseline((train[0][:5], np.zeros(5, int)), test, num_classes=2) is None  # one class


def test_the_line_comes_only_when_the_network_is_not_clearly_better() -> None:
    digits_like = Baseline(acc=0.98, f1_macro=0.98, seconds=0.3, train_images=1257)
    assert verdict(digits_like, 0.99, 1257, (8, 8)) is None  # half the baseline's errors
    tiny = Baseline(acc=1.0, f1_macro=1.0, seconds=0.1, train_images=134)
    line = verdict(tiny, 0.90, 134, (24, 24), epochs=3)
    assert line.startswith("a linear model on raw pixels scores 1.00 test accuracy here, the network 0.90")
    assert "3 epoch(s)" in line and "134 training images" in line and "--baseline false" in line
    assert verdict(Baseline(0.80, 0.8, 0.1, 50), 0.81, 50, (32, 32)) is not None  # higher, but not clearly
