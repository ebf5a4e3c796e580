"""CenterPoint's heatmap starts from its ``init_bias`` prior (mmdet3d #1554).

``SeparateHead.init_weights`` sets the last heatmap convolution's bias to
``init_bias`` (-2.19: a prior of 0.1 per class, as in the original
CenterPoint). But ``CenterHead`` keeps its task heads in a plain
``nn.ModuleList``, which has no ``init_weights``, so mmengine's recursive
``init_weights`` never reaches them (until mmdet3d's unified-initialisation
refactor, PR #622, ``CenterHead.init_weights`` called them itself): the bias
stays near 0 and the focal loss starts in the thousands.

:class:`CenterHead` is registered under the upstream name in mmdet3d's
``MODELS``, so every config that names ``CenterHead`` (ours and mmdet3d's
own) gets it. After the inherited ``init_weights`` it sets each task head's
heatmap bias (and ``DCNSeparateHead``'s ``cls_head`` bias) to ``init_bias``;
the convolutions keep the initialisation they have today. Running the task
heads' whole ``init_weights`` instead is worse: its ``init_cfg``
Kaiming-initialises the heatmap convolutions too, whose logits then saturate.
Measured on ``centerpoint_pillar_synthetic.py`` (one batch of 2, seed 0):
first heatmap loss 2,521 without a fix, 9,097 with the whole
``init_weights``, 44 with this one; mean of the first 10 logged losses 42-47
over three seeds (105 with 0.x's Kaiming on the regression branches too).
Remove once mmdet3d initialises the heatmap bias itself.
"""
from torch import nn

from mmdet3d.models.dense_heads import centerpoint_head as upstream
from mmdet3d.registry import MODELS

NAME = 'centerhead_init'


def init_heatmap_bias(head: nn.Module) -> None:
    """Set the heatmap bias of one task head of ``CenterHead``.

    Args:
        head (nn.Module): A ``SeparateHead`` or ``DCNSeparateHead``.
    """
    if isinstance(head, upstream.DCNSeparateHead):
        head.cls_head[-1].bias.data.fill_(head.init_bias)
    elif 'heatmap' in getattr(head, 'heads', {}):
        head.heatmap[-1].bias.data.fill_(head.init_bias)


class CenterHead(upstream.CenterHead):
    """mmdet3d's ``CenterHead`` whose ``init_weights`` also sets the task
    heads' heatmap bias; everything else is inherited unchanged."""

    def init_weights(self) -> None:
        super().init_weights()
        for task_head in self.task_heads:
            init_heatmap_bias(task_head)


def apply() -> bool:
    """Register :class:`CenterHead` in mmdet3d's ``MODELS``.

    Returns:
        bool: True (every mmdet3d release so far needs it).
    """
    MODELS.register_module(name='CenterHead', module=CenterHead, force=True)
    return True
