"""CenterPoint task heads initialised as mmdet3d intends (mmdet3d #1554).

``CenterHead`` keeps its task heads (``SeparateHead`` / ``DCNSeparateHead``)
in a plain ``nn.ModuleList``. mmengine's ``BaseModule.init_weights`` calls
``init_weights`` only on children that have one, and ``nn.ModuleList`` has
none, so the task heads' own ``init_weights`` never runs: their convolutions
keep PyTorch's default init instead of Kaiming, and the heatmap bias stays
near 0 instead of ``init_bias`` (-2.19, a prior of 0.1 per class). The
focal loss then starts around 2,000-3,000 instead of about 10.

:class:`CenterHead` is registered under the upstream name in mmdet3d's
``MODELS``, so every config that names ``CenterHead`` (ours and mmdet3d's
own) gets it; after the inherited ``init_weights`` it runs each task head's
``init_weights`` that has not run yet. Remove once mmdet3d initialises its
task heads itself.
"""
from mmdet3d.models.dense_heads import centerpoint_head as upstream
from mmdet3d.registry import MODELS

NAME = 'centerhead_init'


class CenterHead(upstream.CenterHead):
    """mmdet3d's ``CenterHead`` whose ``init_weights`` reaches its task
    heads; everything else is inherited unchanged."""

    def init_weights(self) -> None:
        super().init_weights()
        for task_head in self.task_heads:
            if not getattr(task_head, 'is_init', False):
                task_head.init_weights()


def apply() -> bool:
    """Register :class:`CenterHead` in mmdet3d's ``MODELS``.

    Returns:
        bool: True (the fix is needed by every mmdet3d release so far).
    """
    MODELS.register_module(name='CenterHead', module=CenterHead, force=True)
    return True
