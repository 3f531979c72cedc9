"""``litstarter convert``: write a labelled image folder, in any format the library reads, as COCO json, YOLO txt or
index PNGs, to take the data to another tool.

    litstarter convert --data.root DIR [--data.labels FILE] [--data.box_format FMT] --targets {boxes,masks}
        --to {coco,yolo,masks} --out DIR

The folder is read as ``litstarter fit`` reads it (the same ``data.*`` options, the same checks: a bad box is one
line, or left out and counted under ``--data.on_bad_box skip``), for boxes (detection) or masks (segmentation);
boxes are written as ``coco`` or ``yolo``, masks as ``masks`` (index PNGs) or ``coco`` (RLE). Each output is laid
out as the library's own readers read it back (:mod:`litstarter._engine.convert`); images are copied, splits kept.

* **Unsplit images** (the fractions split them at fit time) go to ``images/`` beside ``masks/`` as index PNGs, which
  the library reads back unsplit; COCO and YOLO have no unsplit layout, so there they go to ``train`` and the
  summary line says how many.
* **One name twice**: two images of one split with one stem (``a/1.png`` and ``b/1.jpg``) would overwrite each
  other's files; they are refused in one line naming both, never renamed.
* **Nothing half-written**: ``--out`` must not exist or be empty; the output is written into a hidden sibling and
  renamed into place at the end, so a refusal or a failure leaves nothing behind.

One line says what was read and what was written where.
"""

from __future__ import annotations

from pathlib import Path

from litstarter._engine.arguments import ArgumentParser
from litstarter._engine.convert.coco import write_coco
from litstarter._engine.convert.masks import write_masks
from litstarter._engine.convert.output import check_out, into_place
from litstarter._engine.convert.plan import plan
from litstarter._engine.convert.source import read_source
from litstarter._engine.convert.yolo import write_yolo
from litstarter._engine.images.label_formats import BOX_FORMAT_NAMES
from litstarter._engine.images.listing import shown
from litstarter.errors import UsageError

PACKAGE = __name__.split(".")[0]
#: What each kind of target can be written as: ``{--targets: {--to: writer}}``.
WRITERS = {
    "boxes": {"coco": write_coco, "yolo": write_yolo},
    "masks": {"masks": write_masks, "coco": write_coco},
}
#: The file an image's name gives in each output, for the refusal of two images of one name.
NAMED_AS = {"coco": "images/<split>/<stem>.*", "yolo": "labels/<split>/<stem>.txt", "masks": "<split>/masks/<stem>.png"}


def parser() -> ArgumentParser:
    """The command's options: the fit's ``data.*`` names, what to read the folder for, what to write and where."""
    out = ArgumentParser(
        prog=f"{PACKAGE} convert",
        description=(
            "Write a labelled image folder (any format fit reads) as COCO json, YOLO txt or index PNG masks, images"
            " copied and splits kept, laid out as the library reads them back."
        ),
    )
    data = out.add_argument_group("the folder to read, as fit's data.* options read it")
    data.add_argument("--data.root", dest="root", type=Path, required=True, metavar="DIR", help="the labelled folder")
    data.add_argument(
        "--data.labels", dest="labels", metavar="FILE", help="a labels file under data.root (a COCO json, a CSV, ...)"
    )
    data.add_argument(
        "--data.box_format", dest="box_format", choices=BOX_FORMAT_NAMES, help="read this format alone (default: any)"
    )
    data.add_argument(
        "--data.on_bad_box",
        dest="on_bad_box",
        choices=("error", "skip"),
        default="error",
        help="a bad box or shape: refuse the folder naming it (error, the default) or leave it out, counted (skip)",
    )
    data.add_argument(
        "--data.ignore_index",
        dest="ignore_index",
        type=int,
        default=255,
        metavar="N",
        help="masks: the index of ignored pixels (default 255), kept in index PNGs, left out of COCO",
    )
    out.add_argument(
        "--targets", choices=tuple(WRITERS), required=True, help="read the folder for boxes (detection) or masks"
    )
    out.add_argument("--to", choices=("coco", "yolo", "masks"), required=True, help="the format to write")
    out.add_argument("--out", type=Path, required=True, metavar="DIR", help="a new (or empty) folder to write into")
    return out


def refuse_pairing(targets: str, to: str) -> None:
    """Refuse, in one line, a format the targets cannot be written as (boxes as masks, masks as YOLO).

    Raises:
        UsageError: ``to`` is none of ``targets``' formats.
    """
    if to not in WRITERS[targets]:
        said = "; ".join(f"{kind} as {' or '.join(WRITERS[kind])}" for kind in WRITERS)
        raise UsageError(f"--targets {targets} cannot be written --to {to}: {said}")


def main(argv: list[str] | None = None) -> int:
    """Read the folder, write it in the format asked, say what was read and written in one line."""
    args = parser().parse_args(argv)
    refuse_pairing(args.targets, args.to)
    if not args.root.is_dir():
        what = "is not a folder" if args.root.exists() else "does not exist"
        raise UsageError(f"--data.root '{shown(args.root)}' {what}; name the labelled folder to convert")
    check_out(args.out, args.root)
    targets = "mask" if args.targets == "masks" else "boxes"
    source = read_source(args.root, args.labels, args.box_format, targets, args.on_bad_box, args.ignore_index)
    planned = plan(source.items, keeps_unsplit=args.to == "masks", example=NAMED_AS[args.to])
    written = into_place(args.out, lambda folder: WRITERS[args.targets][args.to](folder, source, planned))
    moved = f"; {planned.made_train} image(s) without a split written as train" if planned.made_train else ""
    note = f"; {source.note}" if source.note else ""
    print(
        f"{PACKAGE} convert: read {source.describe()} from '{shown(args.root)}'; wrote {args.to} to"
        f" '{shown(args.out)}' ({written}){moved}{note}"
    )
    return 0
