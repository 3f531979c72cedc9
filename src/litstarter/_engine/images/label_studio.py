"""Label Studio's JSON export (full) and JSON-MIN: a list of tasks, each an image and its regions in percent of the
image's size.

* Found as a ``.json`` list in ``data.root`` whose first bytes name ``annotations``, ``data`` or ``image`` (an
  export is called ``project-<n>-at-<time>-<hash>.json``; two are refused: name one with ``data.labels``), or named
  by ``data.labels``.
* **The image**: ``data.image`` (full; in JSON-MIN the task's ``image``) is Label Studio's URL, e.g.
  ``/data/upload/3/8f2a41c0-cat.jpg``: matched by its base name among the images under ``data.root``, first as it is,
  then without the 8-hex prefix Label Studio's upload adds (``cat.jpg``); a local-storage URL's ``?d=<path>`` and a
  cloud URL (``s3://``, ``gs://``, ``https://``) by their base name too. Nothing outside ``data.root`` is looked at
  (what is matched goes through :func:`.confine.confine` as well); a name two images share is a bad annotation.
  The image's folders give the split (``train/``), else the fractions.
* **Whose annotation** (full export): the latest (``created_at``) that is not cancelled, as Label Studio's own
  converter takes; a task nobody annotated is left out (unlabelled, not a negative), counted in the layout line; an
  annotation without regions is an image without boxes. JSON-MIN holds one annotation per task already.
* **Regions**: ``rectanglelabels`` (or a ``rectangle`` whose ``labels`` share its id) is a box, ``x``, ``y``,
  ``width``, ``height`` in percent of ``original_width`` x ``original_height`` (checked against the image; the
  image's own size where absent); ``rotation`` (degrees clockwise about the top-left corner) gives the box around
  the turned one, clipped to the image. A ``polygonlabels`` region is read as the box around it, counted; other
  regions (``choices``, ``keypointlabels``, ``brushlabels``, text) are left out, counted. A region's one label is
  its class (names sorted); none or two are bad annotations.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from litstarter.errors import BadInputError

from .annotation_files import Unreadable, bounds, files_in, head, number, read_json, relative, split_of, turned
from .box_files import Annotated, Drawn, numbered, shown_size
from .confine import confine
from .label_formats import Found, LabelFormat
from .listing import Walker, shown
from .preprocess import is_image_file

#: The prefix Label Studio's upload puts before a file's name.
UPLOAD_PREFIX = re.compile(r"^[0-9a-f]{8}-")
_TASKS = re.compile(rb'^\[\s*\{.*?"(annotations|data|image|annotation_id)"\s*:', re.DOTALL)
GEOMETRY = {"rectanglelabels", "rectangle", "polygonlabels", "polygon"}
LABELS = ("rectanglelabels", "polygonlabels", "labels")


class LabelStudio(LabelFormat):
    """Label Studio's JSON and JSON-MIN exports (see the module's docstring)."""

    name = "label_studio"
    title = "a Label Studio JSON or JSON-MIN export"
    reads = "<export>.json in data.root or data.labels: <export>.json (images matched by name under data.root)"

    def detect(self, root: Path) -> Found | None:
        """The ``.json`` lists of tasks in ``root``."""
        files = tuple((p, None) for p in files_in(root, ".json") if _TASKS.match(head(p)))
        if not files:
            return None
        return Found(self, files[0][0], ", ".join(relative(p, root) for p, _ in files), files)

    def claims(self, path: Path) -> bool:
        """A ``.json`` list."""
        return path.suffix.lower() == ".json" and head(path)[:1] == b"["

    def read(self, root: Path, found: Found) -> Annotated:
        """The tasks of the one export, their images matched by name.

        Raises:
            BadInputError: two exports; the file does not parse or is not a list of tasks.
        """
        if len(found.files) > 1:
            raise BadInputError(
                f"data.root '{root}' holds {len(found.files)} Label Studio exports ({found.what}): name the one to"
                " read with data.labels"
            )
        path = found.path
        try:
            tasks = read_json(path)
        except Unreadable as err:
            raise BadInputError(f"'{path}' {err}") from None
        if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
            raise BadInputError(f"'{path}' is not a Label Studio export (a list of tasks)")
        result, by_name = Annotated([]), _images_by_name(root)
        located = []
        for n, task in enumerate(tasks):
            where = f"{path.name} task {task.get('id', n)}"
            regions = _regions(task)
            if regions is None:
                result.count("Label Studio task(s) nobody annotated left out (unlabelled, not negatives)")
                continue
            image = _match(_url(task), by_name, where, result)
            if image is not None:
                located.append((where, image, regions))
        names = confine(f"'{path}'", root, [(where, name) for where, name, _ in located], what="task(s)")
        drawn = [
            _drawn(root / name, split_of(name), regions, where, result)
            for (where, _, regions), name in zip(located, names, strict=True)
        ]
        return numbered(drawn, result, root)


def _images_by_name(root: Path) -> dict[str, list[str]]:
    """``{base name: [paths relative to root]}`` of every image under ``root``."""
    out: dict[str, list[str]] = {}
    for found in Walker(root).files(root, keep=is_image_file):
        out.setdefault(found.path.name, []).append(relative(found.path, root))
    return out


def _url(task: dict) -> str:
    """The task's image URL: ``data.image`` (full), ``image`` (JSON-MIN), else its one string naming an image."""
    data = task.get("data") if isinstance(task.get("data"), dict) else task
    value = data.get("image")
    if isinstance(value, str):
        return value
    named = [v for v in data.values() if isinstance(v, str) and is_image_file(urlparse(v).path)]
    return named[0] if len(named) == 1 else ""


def _match(url: str, by_name: dict[str, list[str]], where: str, result: Annotated) -> str | None:
    """The image (relative to ``data.root``) an URL names, by its base name as it is, then without the upload
    prefix; ``None`` with the problem recorded."""
    parsed = urlparse(url)
    local = parse_qs(parsed.query).get("d")
    name = posixpath.basename(unquote(local[0] if local else parsed.path).replace("\\", "/"))
    if not name:
        result.problems.append(f"{where}: no image (data.image is {url!r})")
        return None
    for candidate in dict.fromkeys((name, UPLOAD_PREFIX.sub("", name))):
        found = by_name.get(candidate, [])
        if len(found) > 1:
            result.problems.append(f"{where}: '{shown(url)}' matches {len(found)} images by name: {found[:3]}")
            return None
        if found:
            return found[0]
    stripped = UPLOAD_PREFIX.sub("", name)
    also = f" or '{shown(stripped)}'" if stripped != name else ""
    result.problems.append(f"{where}: '{shown(url)}' matches no image under data.root (by the name '{name}'{also})")
    return None


def _regions(task: dict) -> list[dict] | None:
    """The task's regions, each ``{"type", "value", ...}`` with its labels merged in; ``None``: not annotated."""
    if isinstance(task.get("annotations"), list) or isinstance(task.get("data"), dict):  # the full export
        kept = [a for a in task.get("annotations") or [] if isinstance(a, dict)]
        kept = [a for a in kept if not (a.get("was_cancelled") or a.get("skipped"))]
        if not kept:
            return None
        latest = max(enumerate(kept), key=lambda pair: (str(pair[1].get("created_at") or ""), pair[0]))[1]
        results = [r for r in latest.get("result") or [] if isinstance(r, dict)]
        by_id: dict = {}
        for r in results:
            value = r.get("value") if isinstance(r.get("value"), dict) else {}
            merged = by_id.setdefault(r.get("id", id(r)), {"type": None, "value": {}})
            merged["value"] = {**merged["value"], **value}
            if r.get("type") in GEOMETRY or merged["type"] is None:
                merged["type"] = r.get("type")
                merged["size"] = (r.get("original_width"), r.get("original_height"))
        return list(by_id.values())
    lists = [v for v in task.values() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)]
    regions = [r for v in lists for r in v if any(key in r for key in (*LABELS, "x", "points"))]
    if not regions and "annotation_id" not in task:
        return None
    typed = []
    for r in regions:
        kind = next((key for key in LABELS if key in r), "labels")
        kind = "polygonlabels" if "points" in r else ("rectanglelabels" if kind == "labels" else kind)
        typed.append({"type": kind, "value": r, "size": (r.get("original_width"), r.get("original_height"))})
    return typed


def _drawn(image: Path, split: str | None, regions: list[dict], where: str, result: Annotated) -> Drawn:
    """One task's regions as boxes in the image's pixels; the rest counted or recorded in ``result``."""
    sizes = [tuple(number(v) for v in r.get("size", (None, None))) for r in regions]
    stated = next((s for s in sizes if None not in s), None)
    width, height = stated or shown_size(image) or (0, 0)
    drawn = Drawn(image, split, stated=stated, where=where)
    for j, region in enumerate(regions):
        kind, value, entry = region["type"], region["value"], f"region {j}"
        if kind not in GEOMETRY:
            result.count("Label Studio result(s) that are not rectangles or polygons left out")
            continue
        labels = next((value[key] for key in LABELS if isinstance(value.get(key), list)), [])
        labels = [str(label).strip() for label in labels]
        box = _box(value, kind, width, height)
        if len(labels) != 1 or not labels[0]:
            result.problems.append(f"{where} {entry}: labels {labels} (a box has one class)")
        elif isinstance(box, str):
            result.problems.append(f"{where} {entry} ({labels[0]}): {box}")
        else:
            if kind.startswith("polygon"):
                result.count("Label Studio polygon(s) read as the box around them")
            drawn.add(box, labels[0], entry)
    return drawn


def _box(value: dict, kind: str, width: float, height: float) -> tuple[float, float, float, float] | str:
    """A region's box in pixels, or the phrase saying why there is none."""
    if kind.startswith("polygon"):
        points = value.get("points")
        pairs = [(number(p[0]), number(p[1])) for p in points if isinstance(p, list) and len(p) == 2] if points else []
        if not points or len(pairs) != len(points) or any(None in p for p in pairs):
            return f"points {points!r} are not [x, y] percentages"
        if len(pairs) < 3:
            return f"a polygon of {len(pairs)} point(s) (it needs 3)"
        return bounds([(x * width / 100, y * height / 100) for x, y in pairs])
    x, y, w, h = (number(value.get(k)) for k in ("x", "y", "width", "height"))
    if None in (x, y, w, h):
        return f"x, y, width, height {[value.get(k) for k in ('x', 'y', 'width', 'height')]} are not percentages"
    x1, y1 = x * width / 100, y * height / 100
    box = (x1, y1, x1 + w * width / 100, y1 + h * height / 100)
    degrees = number(value.get("rotation") or 0) or 0.0
    if not degrees:
        return box
    x1, y1, x2, y2 = turned(box, degrees, (x1, y1))
    return max(x1, 0.0), max(y1, 0.0), min(x2, width), min(y2, height)


FORMAT = LabelStudio()
