"""Sparse convolution backward on a CPU-only torch (spconv 2.3.8).

The forward was fixed by traveller59/spconv#366; the backward still asks
``torch.cuda.current_stream()``. Without CUDA, spconv's ops module gets a
stream getter that returns 0 (no stream), which its CPU kernels ignore.
Remove once spconv's backward checks the device itself.
"""
import torch


def _no_cuda_stream() -> int:
    return 0


def let_spconv_train_on_cpu() -> None:
    """Make spconv's backward run without CUDA (see fix 3 above)."""
    if torch.cuda.is_available():
        return
    try:
        from spconv.pytorch import ops as spconv_ops
    except ImportError:
        return  # no spconv: mmdet3d falls back to mmcv's sparse ops
    spconv_ops.get_current_stream = _no_cuda_stream
