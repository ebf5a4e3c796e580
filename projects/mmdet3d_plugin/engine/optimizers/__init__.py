from .bf16_optim_wrapper import BF16AmpOptimWrapper

__all__ = ['BF16AmpOptimWrapper']
