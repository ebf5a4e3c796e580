"""``DataBaseSampler`` without numba and without per-object copies."""
import os
from typing import List, Optional, Tuple

import numpy as np

from mmdet3d.datasets.transforms import DataBaseSampler
from mmdet3d.datasets.transforms.dbsampler import BatchSampler
from mmdet3d.registry import TRANSFORMS
from mmdet3d.structures.ops import box_np_ops
from mmdet3d.structures.points import get_points_type

from .points_io import points_like, read_into
from .box_geometry import box_collision_rows
from .load_points_from_file import FastLoadPointsFromFile
from ..heap import run_in_own_arena
from .packed_infos import pack_db_infos


@TRANSFORMS.register_module()
class FastDataBaseSampler(DataBaseSampler):
    """mmdet3d's ``DataBaseSampler``, same arguments, same samples and the
    same random draws (its ``BatchSampler`` per class, built and drawn
    from as stock does).

    ``sample_class_v2``'s collision test is :func:`box_collision_rows`
    (exact, numpy: no numba compilation in a fresh worker) on the rows of
    the sampled boxes only, then stock's accept/reject pass; each box's BEV
    corners are computed once, not again for every later class; the
    sampled infos are read, not deep-copied (nothing here writes to them).
    The labels are int64 (mmdet3d 1.4.0 names ``np.long``, see
    ``compat.dbsampler``).

    With ``share_infos`` (the default) the database infos, once loaded and
    filtered as stock does, are packed into arrays in shared memory
    (:func:`.packed_infos.pack_db_infos`): the main process holds them in
    about a tenth of the dicts' memory, forked DataLoader workers read
    them without copying a page, spawn and forkserver workers map them
    (the pickled sampler holds a file descriptor, not the infos). Each
    drawn object's info is built when drawn, equal to stock's.

    Args:
        *args: ``DataBaseSampler``'s arguments (``info_path``,
            ``data_root``, ``rate``, ``prepare``, ``sample_groups``, ...).
        share_infos (bool): Whether to pack the database infos into shared
            arrays. Defaults to True.
        **kwargs: ``DataBaseSampler``'s keyword arguments.

    Examples:
        >>> db_sampler = dict(type='FastDataBaseSampler', ...)  # as stock
    """

    def __init__(self, *args, share_infos: bool = True, **kwargs) -> None:
        self.share_infos = share_infos
        if share_infos:
            # The dicts live only while they are packed: in an arena of
            # their own, so the holes they leave are not in the heap that
            # forked workers allocate from (``heap.run_in_own_arena``).
            run_in_own_arena(self._load_packed, args, kwargs)
        else:
            super().__init__(*args, **kwargs)

    def _load_packed(self, args: tuple, kwargs: dict) -> None:
        """Stock's loading and filters, then the infos packed."""
        before = np.random.get_state()  # stock's class samplers shuffle
        super().__init__(*args, **kwargs)
        # Stock's class samplers keep their shuffled order; only their
        # lists change, and their order pickles as its recipe.
        self.db_infos = pack_db_infos(self.db_infos)
        self.group_db_infos = self.db_infos
        recipes = _shuffle_recipes(before, self.sampler_dict)
        for name, sampler in list(self.sampler_dict.items()):
            sampler._sampled_list = self.db_infos[name]
            if recipes is not None:
                self.sampler_dict[name] = RecipeClassSampler.like(
                    sampler, recipes[name])

    def sample_all(self,
                   gt_bboxes: np.ndarray,
                   gt_labels: np.ndarray,
                   img: Optional[np.ndarray] = None,
                   ground_plane: Optional[np.ndarray] = None) -> dict:
        sampled = self.sample_objects(gt_bboxes, gt_labels)
        if sampled is None:
            return None
        sampled_gt_bboxes = sampled['gt_bboxes_3d']
        s_points_list = self._load_sampled_points(
            sampled['infos'], merged=ground_plane is None)
        if ground_plane is not None:
            xyz = sampled_gt_bboxes[:, :3]
            dz = (ground_plane[:3][None, :] * xyz).sum(-1) + ground_plane[3]
            sampled_gt_bboxes[:, 2] -= dz
            for i, s_points in enumerate(s_points_list):
                s_points.tensor[:, 2].sub_(dz[i])
        return {
            'gt_labels_3d': sampled['gt_labels_3d'],
            'gt_bboxes_3d': sampled_gt_bboxes,
            'points': s_points_list[0].cat(s_points_list),
            'group_ids': sampled['group_ids']
        }

    def sample_objects(self, gt_bboxes: np.ndarray,
                       gt_labels: np.ndarray) -> Optional[dict]:
        """Stock ``sample_all``'s choice of objects, without their points:
        ``infos`` (the sampled database infos, in order),
        ``gt_bboxes_3d``, ``gt_labels_3d`` and ``group_ids``; None when
        nothing was sampled. The same random draws as stock."""
        gt_labels = np.asarray(gt_labels)
        sample_num_per_class = []
        for class_name, max_sample_num in zip(self.sample_classes,
                                              self.sample_max_nums):
            present = np.count_nonzero(gt_labels == self.cat2label[class_name])
            sampled_num = int(max_sample_num - present)
            sample_num_per_class.append(
                np.round(self.rate * sampled_num).astype(np.int64))

        sampled = []
        sampled_gt_bboxes = []
        avoid_coll_boxes = gt_bboxes
        avoid_coll_bv = None  # their BEV corners, grown with each class
        for class_name, sampled_num in zip(self.sample_classes,
                                           sample_num_per_class):
            if sampled_num > 0:
                if avoid_coll_bv is None:
                    avoid_coll_bv = _bev_corners(avoid_coll_boxes)
                sampled_cls, sampled_bv = self._sample_class(
                    class_name, sampled_num, avoid_coll_boxes, avoid_coll_bv)
                sampled += sampled_cls
                if len(sampled_cls) > 0:
                    sampled_gt_box = np.stack(
                        [s['box3d_lidar'] for s in sampled_cls], axis=0)
                    sampled_gt_bboxes += [sampled_gt_box]
                    avoid_coll_boxes = np.concatenate(
                        [avoid_coll_boxes, sampled_gt_box], axis=0)
                    avoid_coll_bv = np.concatenate(
                        [avoid_coll_bv, sampled_bv], axis=0)
        if len(sampled) == 0:
            return None
        return {
            'infos': sampled,
            'gt_bboxes_3d': np.concatenate(sampled_gt_bboxes, axis=0),
            'gt_labels_3d': np.array(
                [self.cat2label[s['name']] for s in sampled], dtype=np.int64),
            'group_ids': np.arange(gt_bboxes.shape[0],
                                   gt_bboxes.shape[0] + len(sampled))
        }

    def _paths(self, sampled: List[dict]) -> List[str]:
        return [
            os.path.join(self.data_root, info['path'])
            if self.data_root else info['path'] for info in sampled
        ]

    def point_rows(self, sampled: List[dict]) -> Optional[List[int]]:
        """The number of points of each sampled object, from the sizes of
        its files; None where :meth:`read_points_into` cannot read them
        (a loader of another kind, or options that change the values, or
        files that are not whole float32 rows of ``load_dim``)."""
        loader = self.points_loader
        if not isinstance(loader, FastLoadPointsFromFile) or \
                not loader.plain_local_files() or \
                list(loader.use_dim) != list(range(loader.load_dim)):
            return None
        row_bytes = 4 * loader.load_dim
        try:
            sizes = [os.stat(path).st_size for path in self._paths(sampled)]
        except OSError:
            return None
        if any(size % row_bytes for size in sizes):
            return None
        return [size // row_bytes for size in sizes]

    def read_points_into(self, sampled: List[dict], rows: List[int],
                         out: np.ndarray) -> bool:
        """Each sampled object's points, in order, moved to its box
        (stock's float32 ``translate``), into ``out`` (sum(rows),
        load_dim); False (``out`` then undefined) where a file changed
        since :meth:`point_rows`."""
        start = 0
        for path, info, count in zip(self._paths(sampled), sampled, rows):
            block = out[start:start + count]
            if not read_into(path, block):
                return False
            block[:, :3] += info['box3d_lidar'][:3].astype(np.float32)
            start += count
        return True

    def load_points(self, sampled: List[dict]):
        """The sampled objects' points, moved to their boxes, as one points
        object (stock: the ``cat`` of each object's)."""
        s_points_list = self._load_sampled_points(sampled, merged=True)
        return s_points_list[0].cat(s_points_list)

    def _load_sampled_points(self, sampled: List[dict],
                             merged: bool) -> list:
        """Each sampled object's points (stock's ``points_loader``), moved
        to its box (stock's float32 ``translate``); with ``merged``, maybe
        as one points object holding them all in order."""
        loader = self.points_loader
        rows = self.point_rows(sampled) if merged else None
        if rows is not None:
            out = np.empty((sum(rows), loader.load_dim), dtype=np.float32)
            if self.read_points_into(sampled, rows, out):
                return [points_like(get_points_type(loader.coord_type), out)]
        s_points_list = []
        for path, info in zip(self._paths(sampled), sampled):
            results = dict(lidar_points=dict(lidar_path=path))
            s_points = loader(results)['points']
            s_points.translate(info['box3d_lidar'][:3])
            s_points_list.append(s_points)
        return s_points_list

    def sample_class_v2(self, name: str, num: int,
                        gt_bboxes: np.ndarray) -> List[dict]:
        return self._sample_class(name, num, gt_bboxes,
                                  _bev_corners(gt_bboxes))[0]

    def _sample_class(self, name: str, num: int, gt_bboxes: np.ndarray,
                      gt_bboxes_bv: np.ndarray) -> Tuple[List[dict],
                                                         np.ndarray]:
        """Stock's ``sample_class_v2`` given the BEV corners of
        ``gt_bboxes`` (stock recomputes them for every class: the same
        values, each box's corners depend on that box alone); also returns
        the corners of the samples kept."""
        sampled = self.sampler_dict[name].sample(num)
        num_gt = gt_bboxes.shape[0]
        num_sampled = len(sampled)
        sp_boxes = np.stack([i['box3d_lidar'] for i in sampled], axis=0)
        sp_boxes_bv = _bev_corners(sp_boxes)
        total_bv = np.concatenate([gt_bboxes_bv, sp_boxes_bv], axis=0)
        rows = np.arange(num_gt, num_gt + num_sampled)
        coll = box_collision_rows(total_bv, rows)
        coll[np.arange(num_sampled), rows] = False
        # Stock's pass: a rejected sample no longer blocks later ones.
        valid = []
        for r in range(num_sampled):
            if coll[r].any():
                coll[:, num_gt + r] = False
            else:
                valid.append(r)
        return [sampled[r] for r in valid], sp_boxes_bv[valid]


class RecipeClassSampler(BatchSampler):
    """``BatchSampler`` whose shuffled order pickles as the random state
    it was shuffled from (2.5 KB), not as the order itself (8 bytes an
    object: 5 MB for trainval's database, to every spawn worker), while
    the order is still that one; the same draws.

    Args: see :meth:`like`.
    """

    @classmethod
    def like(cls, sampler: BatchSampler, recipe: tuple) -> \
            'RecipeClassSampler':
        """``sampler`` (its state, its order) with the ``recipe`` of its
        order: ``(numpy RandomState state, length)``."""
        new = cls.__new__(cls)
        new.__dict__.update(sampler.__dict__)
        new._recipe = recipe
        return new

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if np.array_equal(self._indices, _replay(self._recipe)):
            state['_indices'] = None  # not reshuffled since it was built
        return state

    def __setstate__(self, state: dict) -> None:
        if state['_indices'] is None:
            state['_indices'] = _replay(state['_recipe'])
        self.__dict__.update(state)


def _replay(recipe: tuple) -> np.ndarray:
    """The order ``BatchSampler`` shuffled from ``recipe``'s state."""
    state, length = recipe
    rng = np.random.RandomState()
    rng.set_state(state)
    order = np.arange(length)
    rng.shuffle(order)
    return order


def _shuffle_recipes(before: tuple, samplers: dict) -> Optional[dict]:
    """Each class sampler's ``(state, length)`` from which it shuffled,
    numpy's global state having been ``before`` when the first was built
    (stock builds them in order, drawing nothing else); None where the
    replayed orders are not theirs (then they pickle by value)."""
    rng = np.random.RandomState()
    rng.set_state(before)
    recipes = {}
    for name, sampler in samplers.items():
        if type(sampler) is not BatchSampler or not sampler._shuffle:
            return None
        recipe = (rng.get_state(), sampler._example_num)
        order = np.arange(sampler._example_num)
        rng.shuffle(order)
        if not np.array_equal(order, sampler._indices):
            return None
        recipes[name] = recipe
    return recipes


def _bev_corners(boxes: np.ndarray) -> np.ndarray:
    """BEV corners of LiDAR boxes, as ``sample_class_v2`` computes them."""
    return box_np_ops.center_to_corner_box2d(boxes[:, 0:2], boxes[:, 3:5],
                                             boxes[:, 6])
