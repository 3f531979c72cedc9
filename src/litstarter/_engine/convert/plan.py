"""Where each image goes in ``litstarter convert``'s output: its split's folder under its own file name.

* **Splits** are kept. Images the source gives no split (the fractions split them at fit time) stay unsplit where
  the output has an unsplit layout the library reads back as such (index PNGs: ``images/`` beside ``masks/`` at the
  top); COCO and YOLO have none (a fit reads their train split, and carves val from it), so they are written as
  ``train`` and the summary line says so.
* **Names**: an image keeps its file name, and its label or mask file takes its stem (``labels/train/0001.txt``,
  ``train/masks/0001.png``). Two images of one split with one stem (``a/0001.png`` and ``b/0001.jpg``, whatever the
  case) would overwrite each other: they are refused in one line naming both, nothing renamed behind the user's back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from litstarter.errors import BadInputError

from .source import Item

#: The split unsplit images are written as where the output has no unsplit layout.
TRAIN = "train"


@dataclass
class Plan:
    """The output's splits: ``{split or None (unsplit): items}`` in the source's order, and how many unsplit
    images were written as train."""

    splits: dict[str | None, list[Item]] = field(default_factory=dict)
    made_train: int = 0

    def folders(self) -> str:
        """The splits written, as a folder pattern: ``{train,val,test}`` (``""`` for unsplit alone)."""
        names = [split for split in self.splits if split]
        return names[0] if len(names) == 1 else "{" + ",".join(names) + "}" if names else ""


def plan(items: list[Item], keeps_unsplit: bool, example: str) -> Plan:
    """Each item's output split (its own; unsplit kept where ``keeps_unsplit``, else train).

    Args:
        items: The source's images.
        keeps_unsplit: Whether the output has a layout read back as unsplit.
        example: The file an image's name gives, in the refusal (``labels/<split>/<stem>.txt``).

    Raises:
        BadInputError: two images of one split share a stem.
    """
    out = Plan()
    seen: dict[tuple[str | None, str], Item] = {}
    for item in items:
        split = item.split if item.split or keeps_unsplit else TRAIN
        out.made_train += split != item.split
        stem = PurePosixPath(item.name).stem
        other = seen.setdefault((split, stem.casefold()), item)
        if other is not item:
            where = example.replace("<split>", split or "").replace("//", "/").replace("<stem>", stem).lstrip("/")
            raise BadInputError(
                f"'{other.name}' and '{item.name}' are both {split or 'unsplit'} images named '{stem}': both would be"
                f" written as {where}; rename one (or move it to another split) and convert again"
            )
        out.splits.setdefault(split, []).append(item)
    return out
