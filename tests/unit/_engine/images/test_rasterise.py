"""The rasterisation rule, exactly: a pixel is a shape's when its centre is inside (even-odd, half-open on edges); run-
length masks decode exactly, as pycocotools encodes them; pycocotools' own polygon fill differs only on pixels whose
centre lies within a quarter pixel of an edge; the later shape wins."""

from __future__ import annotations

import numpy as np
import pytest

from litstarter._engine.images.rasterise import (
    draw,
    fill_ellipse,
    fill_polygon,
    mask_runs,
    rle_counts,
    rle_decode,
    rle_string,
    runs_to_mask,
)

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # pycocotools on NumPy 2


def test_a_rectangle_on_whole_pixels_is_exactly_its_pixels() -> None:
    mask = fill_polygon([2, 3, 10, 3, 10, 7, 2, 7], 10, 12)
    expected = np.zeros((10, 12), dtype=bool)
    expected[3:7, 2:10] = True
    assert (mask == expected).all() and mask.sum() == 32  # its area


def test_a_centre_on_an_edge_is_inside_on_the_left_and_top_and_outside_on_the_right_and_bottom() -> None:
    # Edges through pixel centres: x = 2.5 (left) and 6.5 (right), y = 1.5 (top) and 4.5 (bottom).
    mask = fill_polygon([2.5, 1.5, 6.5, 1.5, 6.5, 4.5, 2.5, 4.5], 8, 8)
    rows, cols = np.nonzero(mask)
    assert (rows.min(), rows.max(), cols.min(), cols.max()) == (1, 3, 2, 5)


def test_polygons_sharing_an_edge_take_each_pixel_once() -> None:
    left = fill_polygon([0, 0, 3.5, 0, 5.5, 8, 0, 8], 8, 8)  # a slanted shared edge through pixel centres
    right = fill_polygon([3.5, 0, 8, 0, 8, 8, 5.5, 8], 8, 8)
    assert not (left & right).any() and (left | right).all()


def test_a_self_crossing_polygon_is_filled_by_the_even_odd_rule() -> None:
    star = [10, 0, 16, 19, 0, 7, 20, 7, 4, 19]  # a pentagram: its centre is wound twice
    mask = fill_polygon(star, 20, 20)
    assert not mask[10, 10] and mask[4, 10] and mask[9, 3]


def test_points_outside_the_image_are_clipped_not_wrapped() -> None:
    mask = fill_polygon([-5, -5, 20, -5, 20, 3, -5, 3], 6, 10)
    assert mask[:3].all() and not mask[3:].any()


def test_an_ellipse_holds_the_centres_inside_or_on_it() -> None:
    mask = fill_ellipse([5, 5, 3, 2, 0], 10, 10)
    ys, xs = np.mgrid[0:10, 0:10] + 0.5
    assert (mask == (((xs - 5) / 3) ** 2 + ((ys - 5) / 2) ** 2 <= 1)).all()
    turned = fill_ellipse([5, 5, 3, 2, 90], 10, 10)
    assert (turned == mask.T).all()  # a quarter turn about a centre on the diagonal swaps the axes


def test_the_later_shape_wins_where_two_overlap() -> None:
    square = [0, 0, 6, 0, 6, 6, 0, 6]
    inner = [2, 2, 4, 2, 4, 4, 2, 4]
    assert draw([["polygon", 1, square], ["polygon", 2, inner]], 6, 6)[3, 3] == 2
    assert draw([["polygon", 2, inner], ["polygon", 1, square]], 6, 6)[3, 3] == 1


def test_rle_strings_and_runs_round_trip_and_match_a_hand_count() -> None:
    mask = np.array([[0, 1], [1, 1], [0, 0]], dtype=bool)  # column-major: 0 1 0 1 1 0
    assert mask_runs(mask) == [1, 1, 1, 2, 1]
    assert (runs_to_mask([1, 1, 1, 2, 1], 3, 2, order="F") == mask).all()
    assert (rle_decode(rle_string([1, 1, 1, 2, 1]), 3, 2) == mask).all()
    assert rle_counts(rle_string([0, 6])) == [0, 6]  # a mask starting with 1s starts with a run of no 0s
    with pytest.raises(ValueError, match="cover 5 pixels"):
        runs_to_mask([1, 4], 3, 2, order="F")


def test_rle_matches_pycocotools_both_ways() -> None:
    mask_api = pytest.importorskip("pycocotools.mask")
    rng = np.random.default_rng(0)
    for trial in range(60):
        height, width = (int(v) for v in rng.integers(1, 40, 2))
        mask = rng.random((height, width)) < rng.random()
        mask[:] = False if trial == 0 else True if trial == 1 else mask
        theirs = mask_api.encode(np.asfortranarray(mask.astype(np.uint8)))["counts"].decode()
        assert rle_string(mask_runs(mask)) == theirs
        assert (rle_decode(theirs, height, width) == mask).all()


def _distance_to_edges(xs: np.ndarray, ys: np.ndarray, points: np.ndarray) -> np.ndarray:
    best = np.full(xs.shape, np.inf)
    for a, b in zip(points, np.roll(points, -1, axis=0), strict=True):
        ab = b - a
        t = np.clip(((xs - a[0]) * ab[0] + (ys - a[1]) * ab[1]) / (ab @ ab), 0, 1)
        best = np.minimum(best, np.hypot(xs - a[0] - t * ab[0], ys - a[1] - t * ab[1]))
    return best


def test_pycocotools_polygon_fill_differs_only_within_a_quarter_pixel_of_an_edge() -> None:
    mask_api = pytest.importorskip("pycocotools.mask")
    rng = np.random.default_rng(1)
    for _ in range(100):
        points = rng.uniform(0, 50, (6, 2))  # self-crossing as often as not
        ours = fill_polygon(points.ravel(), 40, 50)
        theirs = mask_api.decode(mask_api.frPyObjects([points.ravel().tolist()], 40, 50))[:, :, 0].astype(bool)
        ys, xs = np.nonzero(ours != theirs)
        assert (_distance_to_edges(xs + 0.5, ys + 0.5, points) < 0.25).all()
