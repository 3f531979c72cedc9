"""Builders every test may use: paths, running the CLI, fit arguments, image folders, TensorBoard events.

Session fixtures (one shared digits fit) live in tests/conftest.py; plain functions live here.
Tests make their own data (nothing is downloaded).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
DEFAULT_CONFIG = CONFIGS / "default.yaml"
FOLDER_CONFIG = CONFIGS / "data" / "image_folder.yaml"


def run_cli(args: list[str]):
    """Run the LightningCLI in this process and return it (fast: no second `import lightning`)."""
    from litstarter.cli import main

    return main(args)


def run_litstarter(
    args: list[str],
    cwd: Path | None = None,
    timeout: float = 300,
    env: dict | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """Run ``python -m litstarter ARGS`` in a subprocess; on failure, show its output."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "litstarter", *args],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"litstarter {' '.join(args)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    return proc


def fast_fit_args(
    save_dir: Path,
    epochs: int = 3,
    name: str = "digits",
    batch_size: int | None = None,
    configs: Sequence[Path] = (),
) -> list[str]:
    """Arguments for a quick fit (digits unless ``configs`` say otherwise) whose run lands in ``save_dir/name``.

    ``configs`` compose on top of configs/default.yaml, before these arguments, which therefore win.
    """
    args = [
        "fit",
        "--config",
        str(DEFAULT_CONFIG),
        *(arg for config in configs for arg in ("--config", str(config))),
        f"--trainer.max_epochs={epochs}",
        f"--trainer.logger.init_args.save_dir={save_dir}",
        f"--trainer.logger.init_args.name={name}",
        "--data.init_args.num_workers=0",
    ]
    return args if batch_size is None else [*args, f"--data.init_args.batch_size={batch_size}"]


def launcher_env(**extra: str) -> dict[str, str]:
    """This environment for a launcher (torchrun, the SLURM script): the venv's bin first, one thread per
    process, and no SLURM_* / TORCHELASTIC_* variable of a real cluster leaking in; ``extra`` on top."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for key in [k for k in env if k.startswith(("SLURM_", "TORCHELASTIC_"))]:
        env.pop(key)
    return {**env, **extra}


def free_port() -> int:
    """A TCP port that is free right now on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def best_checkpoint(run_dir: Path) -> Path:
    """The best (non-last) checkpoint of a run."""
    ckpts = [p for p in (run_dir / "checkpoints").glob("*.ckpt") if p.name != "last.ckpt"]
    assert len(ckpts) == 1, ckpts
    return ckpts[0]


def write_image(path: Path, size: tuple[int, int] = (20, 24), mode: str = "RGB", seed: int = 0) -> Path:
    """Write a random image of ``size`` ``(h, w)`` in PIL ``mode``; the format follows the file extension."""
    rng = np.random.default_rng(seed)
    h, w = size
    if mode in ("RGB", "RGBA", "CMYK"):
        image = Image.fromarray(rng.integers(0, 256, (h, w, len(mode)), dtype=np.uint8), mode)
    elif mode == "LA":
        image = Image.fromarray(rng.integers(0, 256, (h, w, 2), dtype=np.uint8), "LA")
    elif mode == "I;16":
        image = Image.fromarray(rng.integers(0, 65536, (h, w), dtype=np.uint16))
    elif mode == "P":
        image = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).convert("P")
    else:
        image = Image.fromarray(rng.integers(0, 256, (h, w), dtype=np.uint8)).convert(mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


#: What ``make_image_folder(..., mixed=True)`` cycles through: JPEG and PNG, grey, RGB, RGBA, palette, odd sizes.
MIXED = [
    (".jpg", "RGB", (20, 28)),
    (".png", "L", (32, 24)),
    (".png", "RGBA", (16, 16)),
    (".jpg", "L", (40, 30)),
    (".png", "P", (24, 36)),
    (".png", "RGB", (64, 48)),
]


#: Real JPEG and PNG files of mixed sizes and PIL modes, each class its own colour so that a short fit can learn.
MIXED_IMAGES = {"mixed": True, "colours": "distinct", "noise": 20.0}


def distinct_colour(index: int) -> tuple[float, float, float]:
    """An RGB colour per class index, far enough from its neighbours that a short fit tells classes apart."""
    return (60 + 60 * (index % 3), 60 + 40 * ((index + 1) % 4), 200 - 50 * (index % 4))


def make_image_folder(
    root: Path,
    counts: Mapping[str, int] | Mapping[str, Mapping[str, int]],
    *,
    size: tuple[int, int] = (20, 24),
    size_jitter: int = 0,
    colours: Mapping[str, float | tuple[float, float, float]] | str | None = None,
    spread: float = 0.0,
    noise: float = 0.0,
    mixed: bool = False,
    mode: str | None = None,
    ext: str = ".png",
    seed: int = 0,
) -> Path:
    """Write ``root/<class>/<i><ext>``, or ``root/<split>/<class>/<i><ext>`` when ``counts`` is nested.

    Args:
        root: The folder to fill (created).
        counts: Images per class, ``{class: n}``, or per split and class, ``{split: {class: n}}``.
        size: Image size ``(h, w)``.
        size_jitter: Add 0..size_jitter-1 pixels to each side, drawn per image (odd sizes and aspect ratios).
        colours: Each class's level: a number (a grey ``L`` image) or an ``(r, g, b)`` triple (RGB);
            ``"distinct"`` gives the classes :func:`distinct_colour`. Without it every image is uniform random RGB
            noise, and the classes only differ by name.
        spread: Standard deviation of each image's level around its class's, drawn once per image, so that
            classes overlap (learnable but not separable).
        noise: Standard deviation of the Gaussian noise added to every pixel.
        mixed: Cycle the files through :data:`MIXED` formats, PIL modes and sizes (``<class>_<i>.jpg|png``),
            overriding ``size`` and ``ext``.
        mode: Save every image in this PIL mode (e.g. ``"L"``), overriding ``mixed``'s modes.
        ext: File extension; it picks the format.
        seed: Seed of the one random stream the whole folder is drawn from.
    """
    rng = np.random.default_rng(seed)
    nested = all(isinstance(v, Mapping) for v in counts.values())
    for split, per_class in counts.items() if nested else [("", counts)]:
        for c, (name, n) in enumerate(per_class.items()):
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            level = distinct_colour(c) if colours == "distinct" else None if colours is None else colours[name]
            for i in range(n):
                file_ext, file_mode, shape = MIXED[(i + c) % len(MIXED)] if mixed else (ext, None, size)
                h, w = (s + int(rng.integers(size_jitter)) if size_jitter else s for s in shape)
                image = Image.fromarray(_pixels(rng, level, (h, w), spread, noise))
                if mode or file_mode:
                    image = image.convert(mode or file_mode)
                image.save(folder / (f"{name}_{i:03d}{file_ext}" if mixed else f"{i:03d}{file_ext}"))
    return root


def _pixels(rng: np.random.Generator, level, hw: tuple[int, int], spread: float, noise: float) -> np.ndarray:
    """One image's uint8 pixels: uniform noise without a ``level``, else the level (+ spread, + pixel noise)."""
    if level is None:
        return rng.integers(0, 256, (*hw, 3), dtype=np.uint8)
    level = np.asarray(level, dtype=np.float64)
    if spread:
        level = level + rng.normal(0, spread)
    shape = hw if level.ndim == 0 else (*hw, 3)
    values = level + rng.normal(0, noise, shape) if noise else np.broadcast_to(level, shape)
    return np.clip(values, 0, 255).astype(np.uint8)


def write_digit_photos(
    root: Path,
    counts: dict[str, list[int]],
    sizes: tuple[int, int] = (28, 64),
    seed: int = 0,
) -> Path:
    """scikit-learn's 8x8 digits as photo-like files: ``root/<split>/<digit>/<i>.{jpg,png}`` (split ``""``: none).

    Each image is a digit upscaled (bicubic) to a random side in ``sizes`` (square, as the digit is), in a
    random ink colour on a random background colour, with sensor-like noise, saved alternately as JPEG (quality
    70-95) and PNG. ``counts[split][d]`` images of digit ``d`` per split; different splits draw different
    source digits (disjoint while the 1,797 last, then reused with new colours, sizes and noise).
    """
    from sklearn.datasets import load_digits

    rng = np.random.default_rng(seed)
    digits = load_digits()
    pools = {d: list(rng.permutation(np.flatnonzero(digits.target == d))) for d in range(10)}
    for split, per_class in counts.items():
        for d, n in enumerate(per_class):
            for i in range(n):
                source = pools[d].pop(0) if pools[d] else rng.choice(np.flatnonzero(digits.target == d))
                path = root / split / str(d) / f"{split or 'digit'}_{d}_{i:04d}{'.jpg' if i % 2 else '.png'}"
                _write_digit_photo(path, digits.images[source] / 16.0, sizes, rng)
    return root


def _write_digit_photo(path: Path, ink: np.ndarray, sizes: tuple[int, int], rng: np.random.Generator) -> None:
    """One 8x8 ``ink`` map (0..1) as a coloured, noisy photo of a random size in ``sizes``."""
    h = w = int(rng.integers(sizes[0], sizes[1] + 1))  # upscaling keeps the square digit square
    big = Image.fromarray((ink * 255).astype(np.uint8)).resize((w, h), Image.Resampling.BICUBIC)
    alpha = np.asarray(big, dtype=np.float64)[..., None] / 255.0  # (h, w, 1)
    background = rng.uniform(0, 255, 3)
    foreground = rng.uniform(0, 255, 3)
    while np.abs(foreground - background).sum() < 200:  # keep the digit visible, as a photo of it would be
        foreground = rng.uniform(0, 255, 3)
    pixels = background * (1 - alpha) + foreground * alpha + rng.normal(0, 8, (h, w, 3))
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
    if path.suffix == ".jpg":
        image.save(path, quality=int(rng.integers(70, 96)))
    else:
        image.save(path)


def tensorboard_events(path: Path, images: bool = False):
    """The TensorBoard events under a run directory (or of one events file), loaded; ``images`` keeps them all."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(path), size_guidance={"images": 0} if images else None)
    events.Reload()
    return events


def last_scalar(run: Path, tag: str) -> float:
    """The last value logged to TensorBoard under ``tag`` in a run directory."""
    return tensorboard_events(run).Scalars(tag)[-1].value


#: A file name that isn't valid UTF-8 (Latin-1 bytes).
ODD_NAME = os.fsdecode(b"caf\xe9.png")


def make_hostile_folder(root: Path) -> Path:
    """18 images in 3 classes, plus ``loop -> ..``, ``self -> .``, a link to a sibling class, an image whose name
    isn't UTF-8 (:data:`ODD_NAME`), a dangling link and a file-link loop."""
    root = make_image_folder(root, {"a": 6, "b": 6, "c": 6}, **MIXED_IMAGES)
    os.symlink("..", root / "a" / "loop")
    os.symlink(".", root / "b" / "self")
    os.symlink("../a", root / "c" / "to_a")
    write_image(root / "c" / ODD_NAME, size=(30, 20))
    os.symlink("gone.png", root / "b" / "dangling.png")
    os.symlink("spin.png", root / "c" / "spin.png")
    return root


class _RunsCode:
    """Unpickling this runs a shell command: what a malicious .pt/.ckpt would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def write_code_running_pickle(path: Path, marker: Path) -> Path:
    """A checkpoint-like pickle at ``path`` whose loading would run ``touch <marker>``: if ``marker`` exists after a
    test, the code ran."""
    import pickle

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump({"state_dict": _RunsCode(marker)}, f, protocol=2)
    return path


#: A prefix that runs a command without root's override rights (CI runs as root): permission checks then bite.
DROP_ROOT = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def run_cases(tmp_path: Path, cases: list[dict], prefix: list[str] = (), timeout: float = 600) -> list[dict]:
    """Run ``cases`` (``{"argv": [...], "env": {...}}``) in one subprocess; return code, stdout, stderr of each."""
    cases_file, results_file = tmp_path / "cases.json", tmp_path / "results.json"
    cases_file.write_text(json.dumps(cases))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    env.pop("LITSTARTER_TRACEBACK", None)
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "tests.e2e.cli_cases", str(cases_file), str(results_file)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(results_file.read_text())


def assert_refused(result: dict, code: int, *named: str) -> str:
    """Exit ``code``; one ``litstarter <sub>: error:`` sentence naming each of ``named``; no traceback."""
    err = result["stderr"]
    context = f"{result['argv']}\n{err[-3000:]}"
    assert result["code"] == code, context
    assert "Traceback" not in err, context
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith("litstarter "), context
    message = err[err.index(errors[0]) :]
    for name in named:
        assert name in message, (name, context)
    return message


def write_marker_module(folder: Path, name: str) -> Path:
    """``folder/<name>.py``: importing it appends its name to ``folder/IMPORTED`` (the sign that a file's class ran
    code), and it offers an optimiser ``Opt``, a scheduler ``Sched`` and a backbone ``Net`` that would work."""
    code = (
        "import pathlib, torch\n"
        f"with open(pathlib.Path(__file__).with_name('IMPORTED'), 'a') as f:\n    f.write({name!r} + '\\n')\n"
        "class Opt(torch.optim.AdamW):\n    pass\n"
        "class Sched(torch.optim.lr_scheduler.ConstantLR):\n    pass\n"
    )
    path = folder / f"{name}.py"
    path.write_text(code)
    return path


def imported_markers(folder: Path) -> list[str]:
    """The marker modules in ``folder`` whose code ran (:func:`write_marker_module`)."""
    marks = folder / "IMPORTED"
    return marks.read_text().split() if marks.exists() else []


def write_tampered_checkpoint(source: Path, path: Path, **changes) -> Path:
    """A copy of a real checkpoint with ``hyper_parameters`` entries replaced, e.g. ``optimizer=...``: a file of
    tensors and strings only, so ``weights_only=True`` reads it."""
    import torch

    checkpoint = torch.load(source, weights_only=True, map_location="cpu")
    checkpoint["hyper_parameters"].update(changes)
    torch.save(checkpoint, path)
    return path


def write_digit_composites(root: Path, images: int, seed: int = 0) -> Path:
    """``examples/multilabel_digits.py``'s folder: composites of 1-3 digits, ``labels.csv`` (``;``-separated) and
    ``labels_columns.csv`` (one 0/1 column per digit)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("multilabel_digits", REPO / "examples" / "multilabel_digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_composites(root, images, seed)


def multilabel_fit_args(save_dir: Path, root: Path, labels: str, name: str, epochs: int = 2) -> list[str]:
    """A quick fit of ``configs/experiment/multilabel.yaml`` on a composite folder from ``labels`` (at 32 px)."""
    configs = [FOLDER_CONFIG, CONFIGS / "task" / "multilabel.yaml", CONFIGS / "experiment" / "multilabel.yaml"]
    return [
        *fast_fit_args(save_dir, epochs, name, configs=configs),
        f"--data.init_args.root={root}",
        f"--data.init_args.labels={labels}",
        f"--data.init_args.cache_dir={save_dir / 'cache'}",
        "--data.init_args.image_size=32",
        "--data.init_args.batch_size=32",
        "--model.pos_weight=auto",
    ]


def write_mask_folder(root: Path, images: int, seed: int = 0, splits: bool = False) -> Path:
    """A segmentation folder of digit canvases as users have them: ``images/`` (grey PNGs, some enlarged to 72 px RGB
    JPEGs) beside ``masks/`` (PNGs of class indices, mode ``L``, each its image's size) and ``classes.txt``; with
    ``splits``, the same inside ``train/``, ``val/`` and ``test/`` (70/15/15)."""
    from litstarter.data.digit_segmentation import CLASS_NAMES, digit_masks

    pictures, masks = digit_masks(images, seed)
    for i, (picture, mask) in enumerate(zip(pictures[:, 0], masks, strict=True)):
        split = ("train" if i < 0.7 * images else "val" if i < 0.85 * images else "test") if splits else ""
        image, target = Image.fromarray(picture), Image.fromarray(mask)
        name = f"{i:03d}.png"
        if i % 3 == 1:  # larger, in colour, as a JPEG: the mask is enlarged with it (nearest neighbour)
            image = image.resize((72, 72), Image.BILINEAR).convert("RGB")
            target = target.resize((72, 72), Image.NEAREST)
            name = f"{i:03d}.jpg"
        for folder, picture_ in (("images", image), ("masks", target)):
            (root / split / folder).mkdir(parents=True, exist_ok=True)
            picture_.save(root / split / folder / (name if folder == "images" else f"{i:03d}.png"))
    (root / "classes.txt").write_text("\n".join(CLASS_NAMES) + "\n")
    return root
