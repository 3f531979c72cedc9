"""``litstarter infer``: predict image files with any artifact (checkpoint, weights, TorchScript, pt2, ONNX).

Usage::

    litstarter infer --model runs/digits/version_0/export/model.onnx --input images/ --output preds.csv --topk 3

Each file is preprocessed exactly as training's eval view (read from the model's contract), inputs are batched, and one
CSV row is written per file; a task whose answer is a file of its own (a segmentation's mask) also writes it, at the
input file's own size, into ``<output>_<mask>s/`` beside the CSV, named in a column. A model trained on tiles
(``model.json``'s ``tiling``) predicts each file at its own size by sliding windows. A file that cannot be decoded gets
a row with its ``error`` and the rest are still predicted; the exit status is then 1. Torch-free at import time: with an
``.onnx`` model this command never imports torch or Lightning.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from litstarter._engine.arguments import ArgumentParser
from litstarter._engine.atomic_io import atomic_write, unwritable_reason
from litstarter._engine.errors import run_reporting
from litstarter._engine.images.listing import Walker, file_problem, shown
from litstarter.errors import UsageError
from litstarter.tta import check_tta, tta_logits

if TYPE_CHECKING:  # numpy and the backends load when files are predicted: `infer --help` answers without them
    import numpy as np

    from litstarter.extras.deploy.backends import Backend


@dataclass
class Prediction:
    """The outcome for one input file: the task's answer (``TaskAnswers``: its outputs, or on an :attr:`on_source`
    task the file's own pixels) and its CSV rows (``TaskAnswers.csv_rows``: one; one a box), or an error."""

    file: str
    error: str = ""
    answer: object = None
    rows: list[list[str]] | None = None


def list_inputs(paths: Sequence[str | os.PathLike]) -> tuple[list[Path], int, list[str]]:
    """Expand files and folders (recursively, sorted) into input files, each real file once.

    Returns the files, the hidden files and folders skipped, and notes on folder links not followed and files
    met twice (see ``_engine/images/listing.py``: each real folder and file once, across all of ``paths``: a file
    given again, by name or inside a folder given too, keeps the first name it was met by). Every visible file is
    an input, whatever its extension or name, and so is a dangling link or a link loop: one that can't be read
    gets a row with the reason rather than being dropped. Hidden files and folders (``.DS_Store``,
    ``.ipynb_checkpoints/``) are skipped and counted.

    Raises:
        UsageError: If a path does not exist, or a folder holds no visible files.
    """
    files: list[Path] = []
    hidden = 0
    notes = []
    named = Walker(Path.cwd())  # what every folder's walker and every named file share: what was listed
    again: list[str] = []
    unreadable: set[str] = set()  # files without an inode to tell them by (a dangling link): by their path
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            walker = named.under(path)
            if walker.listed(path):
                again.append(shown(path))
                continue
            found = walker.files(path)
            hidden += walker.hidden
            if walker.report():
                notes.append(f"{shown(path)}: {walker.report()}")
            if not found and not walker.duplicates:
                raise UsageError(f"--input folder {shown(path)} holds no (visible) files")
            files.extend(f.path for f in found)
            unreadable.update(os.path.abspath(f.path) for f in found if f.problem)
        elif os.path.lexists(path):  # a file, or a dangling link / link loop reported in its row
            for f in named.named(path):
                if f.problem and os.path.abspath(f.path) in unreadable:
                    again.append(shown(path))
                    continue
                if f.problem:
                    unreadable.add(os.path.abspath(f.path))
                files.append(f.path)
        else:
            raise UsageError(f"--input not found: {shown(path)}")
    if named.report():
        notes.append(f"--input: {named.report()}")
    if again:
        again_names = ", ".join(again)
        notes.append(f"listed once what was given again (or a folder inside another --input folder): {again_names}")
    return files, hidden, notes


def check_output(output: str | os.PathLike, inputs: Sequence[Path]) -> None:
    """Refuse an ``--output`` that would destroy an input, cannot be a file, or cannot be written; before any work.

    Raises:
        UsageError: Saying which: one of the inputs, a folder, or not writable (naming the folder).
    """
    path = Path(output)
    if path.is_dir():
        raise UsageError(f"--output '{path}' is a folder; give the CSV file to write, e.g. {path / 'predictions.csv'}")
    if path.exists() and any(_same_file(path, p) for p in inputs):
        raise UsageError(f"--output '{path}' is one of the input files; writing the CSV would overwrite it")
    folder, reason = unwritable_reason(path.parent)  # atomic_write creates the missing folders
    if reason:
        raise UsageError(f"--output '{path}' cannot be written: folder '{folder}': {reason}")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def predict_files(
    backend: Backend, files: Sequence[Path], batch_size: int = 32, topk: int = 3, tta: Sequence[str] = ()
) -> Iterator[Prediction]:
    """Yield one :class:`Prediction` per file, in order; undecodable files yield their error instead.

    Args:
        backend: The loaded model.
        files: Image files.
        batch_size: Images (or, for a model that tiles, windows) per forward pass.
        topk: How many classes to keep per image (capped at the number of classes).
        tta: Views whose probabilities are averaged (``hflip``, ``crops``; see ``litstarter.tta``).
    """
    import numpy as np

    contract = backend.contract
    answers = contract.answers()  # what the outputs mean: the task's (litstarter.tasks.answers)
    k = min(topk, contract.num_classes)
    pending: list[tuple[Path, np.ndarray | None, str]] = []

    def run(images: np.ndarray) -> np.ndarray:  # views (or windows) -> logits
        return tta_logits(backend, images, tta) if tta else backend(images)

    def forward(good: list[np.ndarray]) -> Iterator[np.ndarray]:
        if contract.tiling is None:  # one view per file: the batch in one pass
            yield from answers.outputs(run(np.stack(good)))
            return
        from litstarter.extras.deploy.tiling import predict_image

        for image in good:  # at its own size, window by window (model.json's tiling)
            yield answers.outputs(predict_image(contract, run, image, batch_size))[0]

    def flush() -> Iterator[Prediction]:
        good = [image for _, image, _ in pending if image is not None]
        outputs = forward(good)
        for path, image, error in pending:
            if image is None:
                yield Prediction(shown(path), shown(error))
                continue
            answer = next(outputs)
            if answers.on_source:  # the answer on the file's own pixels (a mask, boxes)
                answer = answers.source_answer(answer, path, contract.view(image))
            yield Prediction(shown(path), answer=answer, rows=answers.csv_rows(answer, k))
        pending.clear()

    for path in files:
        problem = file_problem(path)  # a dangling link, a link loop, a folder
        if problem:
            pending.append((path, None, problem))
            continue
        try:
            pending.append((path, contract.load_image(path), ""))
        except Exception as err:  # any decode failure is reported per file, never fatal
            pending.append((path, None, f"{type(err).__name__}: {err}"))
        if sum(image is not None for _, image, _ in pending) >= batch_size:
            yield from flush()
    if pending:
        yield from flush()


def write_predictions(
    path: str | os.PathLike, predictions: Sequence[Prediction], columns: Sequence[str], files: dict | None = None
) -> Path:
    """Write the CSV (UTF-8) atomically: ``file``, the task's ``columns`` (``TaskAnswers.csv_columns``), ``error``,
    a row per answer row (a box each, for boxes); a failed file has empty cells and its ``error``. ``files``:
    ``{"column": name, "paths": [per prediction]}`` for a task whose answers are files, a column of their paths
    before ``error``."""
    column = [files["column"]] if files else []

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["file", *columns, *column, "error"])
            for i, pred in enumerate(predictions):
                written = [files["paths"][i] or ""] if files else []
                for cells in pred.rows or [[""] * len(columns)]:
                    writer.writerow([pred.file, *cells, *written, pred.error])

    return atomic_write(path, write)


def write_answer_files(output: Path, predictions: Sequence[Prediction], answers) -> dict:
    """Each prediction's answer file (a mask PNG) into ``<output stem>_<kind>s/``, named after its input (a second
    input of one name gets ``-2``, ...): ``{"column", "paths"}`` for the CSV, paths relative to the CSV's folder."""
    folder = output.parent / f"{output.stem}_{answers.writes_files}s"
    paths, taken = [], set()
    for pred in predictions:
        if pred.answer is None:
            paths.append(None)
            continue
        stem, n = Path(pred.file).stem, 1
        while (name := f"{stem}.png" if n == 1 else f"{stem}-{n}.png") in taken:
            n += 1
        taken.add(name)
        data = answers.file_bytes(pred.answer)
        atomic_write(folder / name, lambda tmp, data=data: tmp.write_bytes(data))
        paths.append(f"{folder.name}/{name}")
    return {"column": answers.writes_files, "paths": paths}


def build_parser() -> argparse.ArgumentParser:
    """The ``litstarter infer`` argument parser."""
    parser = ArgumentParser(
        prog="litstarter infer",
        description="Classify image files with a checkpoint or an exported model; one CSV row per file.",
    )
    parser.add_argument("--model", required=True, help="A .ckpt, weights.pt, model.ts, model.pt2 or .onnx file.")
    parser.add_argument("--input", required=True, nargs="+", help="Image files and/or folders (searched recursively).")
    parser.add_argument("--output", required=True, help="CSV to write (file, pred, prob, top-k, error).")
    parser.add_argument("--topk", type=int, default=3, help="Classes (with probabilities) per row.")
    parser.add_argument("--batch_size", type=int, default=32, help="Images per forward pass.")
    parser.add_argument(
        "--tta", nargs="*", default=[], help="Average the probabilities over views: hflip, crops (test's model.tta)."
    )
    parser.add_argument("--num_threads", type=int, default=None, help="Intra-op threads; default: the runtime's.")
    parser.add_argument(
        "--trust_model",
        action="store_true",
        help="Also load formats that can run code: TorchScript (.ts), a .pt2 holding anything beyond plain "
        "tensors and aten calls, and a .ckpt or weights.pt whose backbone is a class outside litstarter (loading it "
        "imports that module). Only for files you made yourself.",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``litstarter infer``; returns 0, 1 if any file failed or the model file is unusable, 2 for bad arguments
    or paths (see :mod:`litstarter.errors`)."""
    return run_reporting("infer", lambda: _run(argv))


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.topk < 1 or args.batch_size < 1:
        raise UsageError(f"--topk and --batch_size must be >= 1, got {args.topk}, {args.batch_size}")
    tta = check_tta(args.tta, "--tta")
    files, hidden, notes = list_inputs(args.input)
    check_output(args.output, files)
    from litstarter.extras.deploy.backends import open_model

    backend = open_model(args.model, num_threads=args.num_threads, trust_model=args.trust_model)
    topk = min(args.topk, backend.contract.num_classes)
    predictions = list(predict_files(backend, files, args.batch_size, topk, tta))
    answers = backend.contract.answers()
    written = write_answer_files(Path(args.output), predictions, answers) if answers.writes_files else None
    write_predictions(args.output, predictions, answers.csv_columns(topk), written)
    if answers.results_file:  # one file of every answer (COCO's results json for boxes)
        results = Path(args.output).with_suffix(f".{answers.results_file}")
        answered = [(p.file, p.answer) for p in predictions if not p.error]
        atomic_write(results, lambda tmp: tmp.write_bytes(answers.results(answered)))
    failed = [p for p in predictions if p.error]
    for pred in failed:
        print(f"litstarter infer: {pred.file}: {pred.error}", file=sys.stderr)
    for line in notes:
        print(f"litstarter infer: {line}", file=sys.stderr)
    note = f"; skipped {hidden} hidden file(s)" if hidden else ""
    print(
        f"{len(predictions) - len(failed)} of {len(predictions)} file(s) predicted with {backend.path.name} "
        f"({backend.runtime}) -> {args.output}{note}"
    )
    if failed:
        print(f"litstarter infer: {len(failed)} file(s) could not be read (see the 'error' column)", file=sys.stderr)
        return 1
    return 0
