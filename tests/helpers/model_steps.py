"""One training step of a shipped full-size config's model, on a batch of
its own train pipeline from the generated data at nuScenes density; the
same batch again with a change (activation checkpointing), compared."""
import copy
from pathlib import Path
from typing import Dict, Optional, Tuple

import torch
from mmengine.dataset import pseudo_collate
from mmengine.registry import init_default_scope

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIGS = {
    'voxel0075': 'configs/centerpoint/'
    'centerpoint_voxel0075_second_secfpn_8xb4-cyclic-20e_nus-3d.py',
    'voxel01': 'configs/centerpoint/'
    'centerpoint_voxel01_second_secfpn_8xb4-cyclic-20e_nus-3d.py',
    'pillar02': 'configs/centerpoint/'
    'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py',
    'voxelnet_pillar02': 'configs/voxelnet/'
    'voxelnet_pillar02_secfpn_8xb4-cyclic-20e_nus-3d.py',
    'voxelnet_voxel01': 'configs/voxelnet/'
    'voxelnet_voxel01_secfpn_8xb4-cyclic-20e_nus-3d.py',
}


def load(name: str, cfg_options: Optional[dict] = None):
    """A config by :data:`CONFIGS` name, file or ``mmdet3d::`` path,
    loaded as the tools load it."""
    from projects.mmdet3d_plugin import load_config
    path = CONFIGS.get(name, name)
    if '::' not in path:
        path = str(REPO_ROOT / path)
    return load_config(path, cfg_options=cfg_options)


def model_and_batch(name: str, data_root, batch_size: int, seed: int = 0,
                    cfg_options: dict = None):
    """The config's model (train mode, seeded init) and one preprocessed
    batch of ``batch_size`` samples of its train pipeline.

    Returns:
        tuple: ``(cfg, model, data)``, ``data`` the data preprocessor's
        output (``model(**data, mode='loss')`` trains on it).
    """
    from mmdet3d.registry import DATASETS, MODELS
    from mmengine.runner import set_random_seed
    from projects.mmdet3d_plugin.config.data_root import redirect_data_root

    cfg = load(name, cfg_options=cfg_options)
    redirect_data_root(cfg, data_root)
    init_default_scope('mmdet3d')
    set_random_seed(seed)
    dataset = DATASETS.build(copy.deepcopy(cfg.train_dataloader.dataset))
    samples = [dataset[i] for i in range(batch_size)]
    set_random_seed(seed)
    model = MODELS.build(copy.deepcopy(cfg.model))
    model.init_weights()
    model.train()
    with torch.no_grad():
        data = model.data_preprocessor(pseudo_collate(samples), True)
    return cfg, model, data


def loss_and_grads(model, data) -> Tuple[Dict[str, torch.Tensor],
                                         Dict[str, torch.Tensor]]:
    """One forward and backward: the loss terms and each trainable
    parameter's gradient (None where it got none); gradients are cleared
    before."""
    model.zero_grad(set_to_none=True)
    losses = model(**data, mode='loss')
    total, terms = model.parse_losses(losses)
    total.backward()
    grads = {n: None if p.grad is None else p.grad.detach().clone()
             for n, p in model.named_parameters() if p.requires_grad}
    terms = {k: v.detach().clone() for k, v in terms.items()}
    model.zero_grad(set_to_none=True)
    return terms, grads


def buffers(model) -> Dict[str, torch.Tensor]:
    """A copy of every buffer (BatchNorm running statistics and counts)."""
    return {n: b.detach().clone() for n, b in model.named_buffers()}
