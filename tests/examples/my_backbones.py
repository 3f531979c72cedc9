"""An example backbone of your own, outside the package: named in a config by its class path.

    python -m litstarter fit --config configs/default.yaml --model.backbone tests.examples.my_backbones.TinyNet

(``python -m`` puts the current folder on the import path; the ``litstarter`` script needs ``PYTHONPATH=.``.)

The contract it meets is in ``litstarter.models.registry``: ``in_channels`` in, ``(B, num_features)`` out.
"""

from __future__ import annotations
