"""The one place that decides which tests need (or must not have) a GPU."""
import pytest
import torch

requires_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason='needs a CUDA GPU: float16 autocast and GradScaler run on CUDA '
    'only (torch.cuda.is_available() is False here)')

requires_no_cuda = pytest.mark.skipif(
    torch.cuda.is_available(),
    reason='checks the refusal on machines without a GPU; this one has CUDA')
