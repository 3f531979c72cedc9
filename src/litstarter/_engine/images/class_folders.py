"""The class-folder layouts: ``root/<class>/<image>`` and ``root/{train,val,test}/<class>/<image>``.

Class names are the sorted folder names of train; every split must hold exactly train's classes. Images may sit
in sub-folders of a class folder; hidden files and folders and files without an image extension are ignored;
links follow :mod:`litstarter._engine.images.listing`. Each file's target is its class's index.
"""

from __future__ import annotations

from pathlib import Path

from litstarter.errors import BadInputError

from .listing import Found, Walker, shown
from .preprocess import IMAGE_EXTENSIONS, is_image_file
from .splits import SPLIT_NAMES, SourceFile, source_file


def visible_dirs(folder: Path) -> list[Path]:
    """The folders in ``folder`` that are not hidden, sorted by name."""
    return sorted((p for p in folder.iterdir() if not p.name.startswith(".") and p.is_dir()), key=lambda p: p.name)


def class_names_of(folders: list[Path]) -> list[str]:
    """The folders' names as class names; a name that isn't valid UTF-8 can't be one (class names go into
    checkpoints, metrics and exported models as text)."""
    odd = [shown(d) for d in folders if shown(d.name) != d.name]
    if odd:
        raise BadInputError(
            f"class folder name(s) that aren't valid UTF-8: {', '.join(odd)}; rename them (class names are written"
            " into checkpoints, metrics and exported models as text). File names may be anything."
        )
    return [d.name for d in folders]


def _list_classes(folder: Path, names: list[str], walker: Walker, train: Path) -> tuple[list[Found], list[str]]:
    """One folder of class folders: each class's files (classes in order, as ``(found, index)``), and its empty
    class folders; a class set unlike train's is an error naming the classes."""
    present = {d.name for d in visible_dirs(folder)}
    missing, extra = sorted(set(names) - present), sorted(present - set(names))
    if (missing or extra) and folder == train:
        raise BadInputError(
            f"the class folders of '{folder}' changed while the run started: {sorted(present)} now, {names} before;"
            " restart the run"
        )
    if missing or extra:
        what = [f"lacks class folder(s) {missing}"] if missing else []
        what += [f"has class folder(s) {extra} that '{train}' lacks"] if extra else []
        raise BadInputError(f"'{folder}' {' and '.join(what)}: every split needs exactly the training classes {names}")
    files, empty = [], []
    for index, name in enumerate(names):
        found = walker.files(folder / name, keep=is_image_file)
        files += [(f, index) for f in found]
        if not found:
            empty.append(str(folder / name))
    return files, empty


def raise_empty(empty: list[str]) -> None:
    """Refuse empty class folders, every one named."""
    if empty:
        listed = "\n  ".join(shown(e) for e in empty)
        raise BadInputError(
            f"{len(empty)} class folder(s) hold no image files ({', '.join(sorted(IMAGE_EXTENSIONS))}):\n  {listed}\n"
            "A class is never dropped silently: add images or remove the folder."
        )


def list_class_folders(
    root: Path, names: list[str], split_dirs: dict[str, str], walker: Walker
) -> dict[str | None, list[SourceFile]]:
    """Every file with its class index: ``{None: files}`` for ``root/<class>`` (to be split by the fractions), else
    ``{split: files}`` as the split folders give them, classes in order."""
    if not split_dirs:
        files, empty = _list_classes(root, names, walker, root)
        raise_empty(empty)
        return {None: [source_file(root, f, index) for f, index in files]}
    train_dir = root / split_dirs["train"]
    listed, empty = {}, []
    for split in SPLIT_NAMES:
        if split in split_dirs:
            files, split_empty = _list_classes(root / split_dirs[split], names, walker, train_dir)
            listed[split] = [source_file(root, f, index) for f, index in files]
            empty += split_empty
    raise_empty(empty)
    return listed
