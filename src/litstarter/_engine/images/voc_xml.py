"""Pascal VOC XML: an ``.xml`` per image, as VOC itself, LabelImg and the VOC exports of CVAT, Roboflow and Label
Studio write them.

Found where those tools put them:

* ``annotations/*.xml`` beside ``images/`` (either may hold split folders: ``annotations/train/a.xml`` reads
  ``images/train/<filename>``);
* VOC's own ``Annotations/*.xml`` beside ``JPEGImages/``, split by ``ImageSets/Main/{train,val,test}.txt`` where
  they are (``trainval.txt`` is train when neither ``train.txt`` nor ``val.txt`` is); an annotation no split file
  lists is not read (counted), an id listed without its ``.xml`` is a bad annotation;
* ``*.xml`` beside the images, in ``data.root`` or in its split folders (LabelImg's default; Roboflow's export:
  ``train/``, ``valid/``, ``test/``).

Without ``ImageSets``, a split folder on the way to the ``.xml`` gives its split (else the fractions split them).
Each file is read as:

* **the image**: ``<filename>`` in the image folder mirroring the annotation folder (``annotations`` -> ``images``,
  ``Annotations`` -> ``JPEGImages``), else beside the ``.xml`` (a name without extension: with an image's);
  never ``<path>``, which holds the annotator's own machine's path. Every ``<filename>`` goes through
  :func:`.confine.confine` before any image is opened.
* ``<size>``: its width and height are checked against the image (another size: not its image).
* **each** ``<object>`` (its ``<part>``\\ s are not boxes): ``<name>`` is the class, ``<bndbox>``'s ``xmin ymin xmax
  ymax`` the box's edges in pixels, as LabelImg, CVAT, Roboflow and Label Studio write them (VOC's own files count
  pixels from 1: their boxes read 1 px right and down of the objects' edges).
* ``<difficult>1`` boxes are left out, neither trained on nor scored, and counted in the layout line. torchmetrics'
  mAP would score them as ignore regions (``iscrowd``), but torchvision's detectors have no ignore region in their
  losses and a cached box row carries no flag, so they are left out everywhere, as Ultralytics' VOC conversion
  does. ``<truncated>`` and ``<occluded>`` boxes are trained on as any.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from litstarter.errors import BadInputError

from .annotation_files import Unreadable, files_in, number, read_xml, relative, split_of, subfolders, xml_root
from .box_files import Annotated, Drawn, numbered
from .confine import confine, outside_root
from .label_formats import Found, LabelFormat
from .preprocess import IMAGE_EXTENSIONS
from .splits import SPLIT_NAMES, canonical_split

#: The layout line's phrase for the difficult boxes left out.
DIFFICULT = "difficult box(es) left out (VOC's <difficult>1: neither trained on nor scored)"
UNLISTED = "annotation(s) in no ImageSets/Main split file, not read"
#: Folder names (any case) that hold the ``.xml`` files, and those that hold their images.
ANNOTATION_FOLDERS, IMAGE_FOLDERS = ("annotations",), ("images", "jpegimages")
COORDINATES = ("xmin", "ymin", "xmax", "ymax")


class PascalVoc(LabelFormat):
    """Pascal VOC XML (see the module's docstring)."""

    name = "voc"
    title = "Pascal VOC XML"
    reads = (
        "annotations/*.xml beside images/, VOC's Annotations/ + JPEGImages/ (+ ImageSets/Main/<split>.txt), or an"
        " .xml beside each image"
    )

    def detect(self, root: Path) -> Found | None:
        """The folders one of whose first three ``.xml`` is a VOC ``<annotation>``, and their files with their
        splits."""
        listed = {folder: files_in(folder, ".xml") for folder in _candidates(root)}  # each folder listed once
        folders = [f for f, xmls in listed.items() if any(xml_root(x) == "annotation" for x in xmls[:3])]
        if not folders:
            return None
        image_sets = root / "ImageSets" / "Main"
        present = set(listed[folders[0]])
        sets = _image_sets(root, image_sets, present) if len(folders) == 1 and image_sets.is_dir() else None
        if sets is None:
            files = tuple((xml, split_of(relative(xml, root))) for f in folders for xml in listed[f])
            what = f"{', '.join(relative(f, root) + '/*.xml' for f in folders)} ({len(files)} files)"
            return Found(self, Path(os.path.commonpath(folders)), what.replace("./*.xml", "*.xml"), files)
        files, missing = sets
        unlisted = len(present - {xml for xml, _ in files})
        what = f"{relative(folders[0], root)}/*.xml with ImageSets/Main/<split>.txt ({len(files)} listed)"
        counted = ((UNLISTED, unlisted),) if unlisted else ()
        return Found(self, Path(os.path.commonpath(folders)), what, files, missing, counted)

    def read(self, root: Path, found: Found) -> Annotated:
        """Every ``.xml`` of ``found``: the images' ``<filename>`` confined first, then each box checked."""
        result = Annotated([], problems=list(found.problems), counted=dict(found.counted))
        parsed = []
        for xml, split in found.files:
            element = _annotation(xml, root, result)
            if element is not None:
                parsed.append((xml, split, element))
        images = _images(root, found, [(xml, element.findtext("filename").strip()) for xml, _, element in parsed])
        drawn = []
        for (xml, split, element), image in zip(parsed, images, strict=True):
            where = relative(xml, root)
            if isinstance(image, str):
                result.problems.append(f"{where}: <filename> {image}")
                continue
            drawn.append(_drawn(element, image, split or split_of(relative(image, root)), where, result))
        return numbered(drawn, result, root)


def _candidates(root: Path) -> list[Path]:
    """Where ``.xml`` files may be: ``root`` and its split folders, each with its ``annotations`` folder (any case)
    and that folder's split folders."""
    tops = [root, *(f for f in subfolders(root) if canonical_split(f.name))]
    out = []
    for top in tops:
        out.append(top)
        for folder in subfolders(top):
            if folder.name.lower() in ANNOTATION_FOLDERS:
                out += [folder, *(f for f in subfolders(folder) if canonical_split(f.name))]
    return out


def _annotation(xml: Path, root: Path, result: Annotated):
    """The ``<annotation>`` element of ``xml`` with a ``<filename>``, or ``None`` with the problem recorded."""
    where = relative(xml, root)
    try:
        element = read_xml(xml)
    except Unreadable as err:
        result.problems.append(f"{where}: {err}")
        return None
    if element.tag != "annotation":
        result.problems.append(f"{where}: not Pascal VOC (its root element is <{element.tag}>, not <annotation>)")
        return None
    if not (element.findtext("filename") or "").strip():
        result.problems.append(
            f"{where}: <filename> is empty or missing (the image is found by it; <path>, the annotator's own"
            " machine's, is never read)"
        )
        return None
    return element


def _image_folder(root: Path, xml: Path) -> str | None:
    """The image folder mirroring ``xml``'s annotation folder (relative to ``root``), or ``None`` without one."""
    parts = list(Path(relative(xml.parent, root)).parts)
    at = max((i for i, part in enumerate(parts) if part.lower() in ANNOTATION_FOLDERS), default=None)
    if at is None:
        return None
    beside = root.joinpath(*parts[:at])
    mirror = next((f.name for f in subfolders(beside) if f.name.lower() in IMAGE_FOLDERS), None)
    return posixpath.join(*parts[:at], mirror, *parts[at + 1 :]) if mirror else None


def _images(root: Path, found: Found, named: list[tuple[Path, str]]) -> list[Path | str]:
    """Each ``(xml, <filename>)``'s image, or the phrase saying it is not found; every name confined first (one
    refusal per image folder, naming each ``.xml``)."""
    groups: dict[str, list[int]] = {}
    mirrors: dict[Path, str | None] = {}  # one image folder per annotation folder
    for xml, _ in named:
        if xml.parent not in mirrors:
            mirrors[xml.parent] = _image_folder(root, xml)
    folders = [mirrors[xml.parent] for xml, _ in named]
    for i, folder in enumerate(folders):
        groups.setdefault(folder or relative(named[i][0].parent, root), []).append(i)
    source = f"Pascal VOC '{found.path}'"
    for base, members in groups.items():
        entries = [(f"{relative(named[i][0], root)} <filename>", named[i][1]) for i in members]
        confine(source, root, entries, what="annotation(s)", base="" if base == "." else base)
    out: list[Path | str] = []
    listed: dict[Path, set[str]] = {}  # each image folder's file names, listed once
    for (xml, name), folder in zip(named, folders, strict=True):
        places = [root / folder] if folder else []
        beside = relative(xml.parent, root)
        if outside_root(posixpath.join(beside, name)) is None:
            places.append(xml.parent)
        image = _first_file(places, name, listed)
        where = f"{folder}/ or beside the .xml" if folder else "beside the .xml"
        out.append(image if image is not None else f"'{name}' is not found in {where}")
    return out


def _first_file(places: list[Path], name: str, listed: dict[Path, set[str]]) -> Path | None:
    """``name`` in the first of ``places`` holding it; a name without extension with an image's. ``listed``: the
    file names of each place listed so far (one listing per folder, not a file check per image)."""
    names = [name] if Path(name).suffix else [name, *(name + ext for ext in sorted(IMAGE_EXTENSIONS))]
    for place in places:
        if place not in listed:
            listed[place] = {file.name for file in files_in(place, "")}
        for candidate in names:  # listed, else checked (a name with a folder; a case-blind file system's)
            if candidate in listed[place] or (place / candidate).is_file():
                return place / candidate
    return None


def _drawn(element, image: Path, split: str | None, where: str, result: Annotated) -> Drawn:
    """The boxes of one ``<annotation>``; bad ones and difficult ones recorded in ``result``."""
    size = element.find("size")
    stated = tuple(number(size.findtext(k)) if size is not None else None for k in ("width", "height"))
    drawn = Drawn(image, split, stated=stated if None not in stated else None, where=where)
    for j, obj in enumerate(element.findall("object")):
        entry = f"object {j}"
        name = (obj.findtext("name") or "").strip()
        if not name:
            result.problems.append(f"{where} {entry}: <name> is empty (a box needs its class)")
            continue
        if (obj.findtext("difficult") or "0").strip().lower() in ("1", "true"):
            result.count(DIFFICULT)
            continue
        box = obj.find("bndbox")
        texts = [(box.findtext(k) if box is not None else None) for k in COORDINATES]
        values = [number(t) for t in texts]
        if None in values:
            said = " ".join(repr(t) if t is not None else "(missing)" for t in texts)
            result.problems.append(f"{where} {entry} ({name}): <bndbox> xmin ymin xmax ymax {said}: not four numbers")
            continue
        drawn.add(tuple(values), name, entry)
    return drawn


def _image_sets(root: Path, image_sets: Path, present: set[Path]) -> tuple[tuple, tuple] | None:
    """``(((xml, split), ...), (phrase, ...))`` from ``ImageSets/Main/<split>.txt`` (ids confined to the folder of
    the ``present`` ``.xml`` files): the files listed, and a phrase per id listed without its ``.xml``; ``None`` when
    it holds no split file.

    Raises:
        BadInputError: an id in two split files; an id that leaves ``data.root``.
    """
    lists = {s: image_sets / f"{s}.txt" for s in SPLIT_NAMES if (image_sets / f"{s}.txt").is_file()}
    if not ({"train", "val"} & set(lists)) and (image_sets / "trainval.txt").is_file():
        lists["train"] = image_sets / "trainval.txt"
    if not lists:
        return None
    folder = next(iter(present)).parent
    base, out, missing, seen = relative(folder, root), [], [], {}
    for split, path in lists.items():
        try:
            lines = path.read_text(encoding="utf-8-sig").splitlines()
        except (OSError, UnicodeDecodeError) as err:
            raise BadInputError(f"'{path}' is not a readable list of image ids: {err}") from None
        ids = [(n, line.split()[0]) for n, line in enumerate(lines, start=1) if line.strip()]
        where = relative(path, root)
        names = confine(f"'{path}'", root, [(f"line {n}", i + ".xml") for n, i in ids], what="line(s)", base=base)
        for (n, image_id), name in zip(ids, names, strict=True):
            if image_id in seen:
                raise BadInputError(
                    f"'{path}' line {n}: '{image_id}' is in split {split}, but {seen[image_id]} lists it too; an"
                    " image is in one split"
                )
            seen[image_id] = where
            if root / name in present or (root / name).is_file():  # an id with a folder: not among them
                out.append((root / name, split))
            else:
                missing.append(f"{where} line {n}: '{image_id}' has no {name}")
    return tuple(out), tuple(missing)


FORMAT = PascalVoc()
