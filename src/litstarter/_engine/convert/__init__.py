"""``litstarter convert``'s engine: a labelled folder read as ``fit`` reads it (:mod:`.source`), planned into the
output's splits and names (:mod:`.plan`), and written as COCO json, YOLO txt or index PNGs (:mod:`.coco`,
:mod:`.yolo`, :mod:`.masks`), each laid out as the library's own readers read it back."""
