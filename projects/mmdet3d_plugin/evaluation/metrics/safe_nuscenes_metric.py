"""nuScenes metric: picklable, formatting on every rank, evaluating in
seconds."""
import json
import os.path as osp
import tempfile
import time
from types import SimpleNamespace
from typing import Dict, List, Optional, Sequence

import mmengine
import numpy as np
from mmengine.logging import print_log
from mmdet3d.evaluation.metrics import NuScenesMetric
from mmdet3d.registry import METRICS
from mmdet3d.structures import LiDARInstance3DBoxes
from nuscenes.eval.common.data_classes import EvalBoxes
from nuscenes.eval.detection.evaluate import DetectionEval

from ...compat.nuscenes_class_names import PicklableDetectionConfig
from ...pickling.state import PicklableStateMixin
from ..functional.detection_eval import Predictions, evaluate
from ..functional.gt_cache import load_ground_truth
from ..functional.nusc_format import (NuscBoxes, SampleFrame, attribute_table,
                                      lidar_to_global)
from ..functional.results_json import write_results_json
from .rank0_evaluate import Rank0EvaluateMixin

#: Evaluation backends: arrays and numba, or the nuScenes devkit.
BACKENDS = ('fast', 'devkit')


@METRICS.register_module()
class SafeNuScenesMetric(PicklableStateMixin, Rank0EvaluateMixin,
                         NuScenesMetric):
    """``NuScenesMetric`` that pickles, formats where the predictions are and
    evaluates in seconds, with the devkit's numbers.

    * Picklable: the stock metric holds the devkit's ``DetectionConfig``
      whose ``class_names`` is a ``dict_keys`` view, so ``copy.deepcopy``
      and ``pickle`` of the metric (or of an evaluator holding it) fail;
      this one holds a :class:`PicklableDetectionConfig`.
    * ``process()`` converts each sample's LiDAR boxes to the devkit's
      global-frame boxes with numpy, on the rank that predicted them
      (:func:`~..functional.nusc_format.lidar_to_global`: the stock
      metric's boxes, in its order, with its attribute names), and keeps
      compact arrays, so rank 0 gathers arrays instead of box objects.
      Camera boxes keep the stock path (formatting and devkit evaluation on
      rank 0).
    * ``backend='fast'`` evaluates those arrays with
      :func:`~..functional.detection_eval.evaluate` (the devkit's
      ``DetectionEval`` on arrays, every metric equal to the devkit's)
      against the split's ground truth loaded once from the tables and
      cached on disk (:func:`~..functional.gt_cache.load_ground_truth`);
      ``backend='devkit'`` runs nuscenes-devkit's ``NuScenesEval`` on
      ``results_nusc.json`` as the stock metric does.
    * ``results_nusc.json`` (the devkit's result file and the test server's
      submission format) is written under ``jsonfile_prefix`` when one is
      given, with ``metrics_summary.json`` and ``metrics_details.json``
      beside it, as the stock metric writes them. Without a prefix the fast
      backend writes nothing (the stock metric writes them to a temporary
      folder and deletes it).
    * When the model predicts no box at all (early in training, or with a
      high score threshold), the devkit stops with ``Invalid box type:
      None``; this metric then reports what the devkit computes for a class
      without predictions, for every class (AP 0, true-positive errors 1,
      NDS 0), and warns, so that validation does not end the training run.

    Args:
        *args: Positional arguments of ``NuScenesMetric`` (``data_root``,
            ``ann_file``, ...).
        backend (str): 'fast' or 'devkit'. Defaults to 'fast'.
        gt_cache_dir (str, optional): Folder of the ground-truth cache of
            the fast backend. Defaults to
            ``~/.cache/mmdet3d_plugin/nuscenes_eval`` (under
            ``$XDG_CACHE_HOME`` when set).
        **kwargs: Keyword arguments of ``NuScenesMetric`` (``metric``,
            ``eval_version``, ``jsonfile_prefix``, ``format_only``, ...).

    Examples:
        >>> val_evaluator = dict(
        ...     type='SafeNuScenesMetric',
        ...     data_root='data/nuscenes/',
        ...     ann_file='data/nuscenes/nuscenes_infos_val.pkl',
        ...     metric='bbox',
        ...     backend='fast')
    """
    pickle_context = ('copy.deepcopy and processes started by spawn or '
                      'forkserver receive the metric by pickle')

    def __init__(self,
                 *args,
                 backend: str = 'fast',
                 gt_cache_dir: Optional[str] = None,
                 **kwargs) -> None:
        if backend not in BACKENDS:
            raise ValueError(
                f'SafeNuScenesMetric: backend must be one of {BACKENDS}, got '
                f"{backend!r}; 'fast' evaluates arrays with the devkit's "
                "rules, 'devkit' runs nuscenes-devkit's NuScenesEval")
        super().__init__(*args, **kwargs)
        self.eval_detection_configs = PicklableDetectionConfig.from_config(
            self.eval_detection_configs)
        self.backend = backend
        self.gt_cache_dir = gt_cache_dir
        self._frames = None  # per-sample tokens and transforms, lazily
        self._class_tables = None

    def __getstate__(self) -> dict:
        # The info-file extract is rebuilt where needed, not shipped.
        state = self.__dict__.copy()
        state['_frames'] = None
        state['_class_tables'] = None
        return state

    # ------------------------------------------------------------------
    # process: format on the rank that predicted
    # ------------------------------------------------------------------
    def process(self, data_batch: dict, data_samples: Sequence[dict]) -> None:
        """Convert each sample's LiDAR boxes to global-frame arrays.

        Args:
            data_batch (dict): A batch of data from the dataloader.
            data_samples (Sequence[dict]): The model's outputs.
        """
        for data_sample in data_samples:
            pred = data_sample['pred_instances_3d']
            bboxes = pred['bboxes_3d']
            if not isinstance(bboxes, LiDARInstance3DBoxes):
                super().process(data_batch, [data_sample])
                continue
            sample_idx = data_sample['sample_idx']
            token, frame = self._sample_frame(sample_idx)
            ranges, attributes = self._tables()
            tensor = bboxes.tensor.detach().cpu()
            velocity = (tensor[:, 7:9].numpy() if tensor.shape[1] >= 9 else
                        np.zeros((len(tensor), 2)))
            labels = pred['labels_3d'].detach().cpu().numpy()
            unknown = np.isnan(ranges[labels])
            if unknown.any():
                raise ValueError(
                    f'SafeNuScenesMetric: class '
                    f'{self.dataset_meta["classes"][labels[unknown][0]]!r} '
                    'has no evaluation range in the detection config '
                    f'{self.eval_version!r}; use the nuScenes class names')
            boxes = lidar_to_global(
                center=bboxes.gravity_center.detach().cpu().numpy(),
                dims=bboxes.dims.detach().cpu().numpy(),
                yaw=bboxes.yaw.detach().cpu().numpy(),
                velocity=velocity,
                scores=pred['scores_3d'].detach().cpu().numpy(),
                labels=labels,
                frame=frame,
                class_ranges=ranges,
                attributes=attributes)
            self.results.append(
                dict(sample_idx=sample_idx,
                     token=token,
                     pred_instances_3d=boxes))

    def _sample_frame(self, sample_idx: int):
        """Token and transforms of a sample, from the info file (loaded
        once per process, only the three fields kept)."""
        if self._frames is None:
            infos = mmengine.load(self.ann_file,
                                  backend_args=self.backend_args)['data_list']
            self._frames = (
                [info['token'] for info in infos],
                np.array([info['lidar_points']['lidar2ego']
                          for info in infos]).reshape(-1, 4, 4),
                np.array([info['ego2global']
                          for info in infos]).reshape(-1, 4, 4))
        tokens, lidar2ego, ego2global = self._frames
        return tokens[sample_idx], SampleFrame.from_matrices(
            lidar2ego[sample_idx], ego2global[sample_idx])

    def _tables(self):
        """Evaluation range and attribute rules per class index."""
        if self._class_tables is None:
            classes = self.dataset_meta['classes']
            class_range = self.eval_detection_configs.class_range
            ranges = np.array(
                [class_range.get(c, np.nan) for c in classes] or [np.nan],
                np.float64)
            default = {c: self.DefaultAttribute.get(c, '') for c in classes}
            self._class_tables = (ranges, attribute_table(classes, default))
        return self._class_tables

    # ------------------------------------------------------------------
    # compute_metrics: write the result file, evaluate
    # ------------------------------------------------------------------
    def compute_metrics(self, results: List[dict]) -> Dict[str, float]:
        """Write ``results_nusc.json`` (when kept) and evaluate.

        Args:
            results (List[dict]): What :meth:`process` kept, all ranks.

        Returns:
            Dict[str, float]: The stock metric's keys and values.
        """
        compact = [
            isinstance(r.get('pred_instances_3d'), NuscBoxes) for r in results
        ]
        if not all(compact) or not results:
            if any(compact):
                raise ValueError(
                    'SafeNuScenesMetric: got LiDAR and camera boxes in one '
                    'evaluation; expected one box type per metric')
            if self.backend == 'fast' and results:
                print_log(
                    'SafeNuScenesMetric: the fast backend evaluates LiDAR '
                    'boxes; these are camera boxes: formatting and '
                    'evaluating with the devkit, as NuScenesMetric does',
                    logger='current')
            return super().compute_metrics(results)
        classes = self.dataset_meta['classes']
        self.version = self.dataset_meta['version']
        samples = {}  # the stock metric's dict: a repeated token stays put
        for result in results:
            samples[result['token']] = result['pred_instances_3d']
        name = 'pred_instances_3d'
        prefix, tmp_dir = self.jsonfile_prefix, None
        if prefix is None and self.backend == 'devkit':
            tmp_dir = tempfile.TemporaryDirectory()
            prefix = osp.join(tmp_dir.name, 'results')
        try:
            result_path = None
            if prefix is not None:
                start = time.perf_counter()
                result_path = write_results_json(
                    osp.join(prefix, name, 'results_nusc.json'), samples,
                    classes, self.modality)
                print_log(
                    f'SafeNuScenesMetric: wrote {result_path} in '
                    f'{time.perf_counter() - start:.1f} s',
                    logger='current')
            if self.format_only:
                print_log(
                    'results are saved in '
                    f'{osp.basename(self.jsonfile_prefix)}',
                    logger='current')
                return {}
            if self.backend == 'devkit':
                return self._evaluate_single(result_path, classes, name)
            return self._evaluate_fast(
                samples, classes, name,
                osp.dirname(result_path) if result_path else None)
        finally:
            if tmp_dir is not None:
                tmp_dir.cleanup()

    def _evaluate_fast(self, samples: Dict[str, NuscBoxes],
                       classes: List[str], result_name: str,
                       output_dir: Optional[str]) -> Dict[str, float]:
        """The devkit's evaluation on arrays; its summary files are written
        to ``output_dir`` when given."""
        start = time.perf_counter()
        gt = load_ground_truth(self.data_root, self.version,
                               self.gt_cache_dir)
        preds = Predictions.from_samples(samples, classes)
        if len(preds.labels) == 0:
            self._warn_no_box(result_name, len(samples))
        metrics, md_list = evaluate(gt, preds, self.eval_detection_configs)
        summary = metrics.serialize()
        summary['meta'] = dict(self.modality)
        if output_dir is not None:
            mmengine.mkdir_or_exist(output_dir)
            with open(osp.join(output_dir, 'metrics_summary.json'),
                      'w') as f:
                json.dump(summary, f, indent=2)
            with open(osp.join(output_dir, 'metrics_details.json'),
                      'w') as f:
                json.dump(md_list.serialize(), f, indent=2)
        print_log(
            f'SafeNuScenesMetric: evaluated {len(preds.labels)} boxes of '
            f'{len(samples)} samples in {time.perf_counter() - start:.1f} s '
            "(fast backend; backend='devkit' runs nuscenes-devkit)",
            logger='current')
        return self._summary_to_metrics(summary, classes, result_name)

    def _warn_no_box(self, result_name: str, num_samples: int) -> None:
        print_log(
            f'SafeNuScenesMetric: {result_name}: the model predicted no box '
            f'in any of the {num_samples} samples; every AP is 0 and '
            'NDS is 0 (the nuScenes devkit cannot evaluate an empty result '
            'file). Check the score threshold (test_cfg) if this persists.',
            logger='current',
            level=30)

    def _evaluate_single(
            self,
            result_path: str,
            classes: Optional[List[str]] = None,
            result_name: str = 'pred_instances_3d') -> Dict[str, float]:
        """``NuScenesMetric._evaluate_single``, which also scores a result
        file without any box.

        The result file is read again only when the devkit fails, to tell
        an empty one (scored here) from any other failure (raised as is).
        """
        try:
            return super()._evaluate_single(result_path, classes,
                                            result_name)
        except Exception:  # the devkit raises a bare Exception
            predictions = mmengine.load(result_path)['results']
            if any(predictions.values()):
                raise
        self._warn_no_box(result_name, len(predictions))
        summary = self._no_predictions_summary()
        mmengine.dump(summary,
                      osp.join(osp.dirname(result_path),
                               'metrics_summary.json'),
                      indent=2)
        return self._summary_to_metrics(summary, classes, result_name)

    def _no_predictions_summary(self) -> dict:
        """The devkit's ``metrics_summary.json`` for no predictions.

        With no predicted box, the ground truth cannot change any number,
        so the devkit's own ``DetectionEval.evaluate`` runs on empty box
        sets: it accumulates "no predictions" for every class and applies
        its rules (AP 0, errors 1, nan where an error is undefined).
        """
        state = SimpleNamespace(cfg=self.eval_detection_configs,
                                gt_boxes=EvalBoxes(),
                                pred_boxes=EvalBoxes(),
                                verbose=False)
        metrics, _ = DetectionEval.evaluate(state)
        return metrics.serialize()

    def _summary_to_metrics(self, summary: dict, classes: List[str],
                            result_name: str) -> Dict[str, float]:
        """Metric keys of ``NuScenesMetric`` from a devkit summary."""
        detail = dict()
        prefix = f'{result_name}_NuScenes'
        for name in classes:
            for k, v in summary['label_aps'][name].items():
                detail[f'{prefix}/{name}_AP_dist_{k}'] = float(f'{v:.4f}')
            for k, v in summary['label_tp_errors'][name].items():
                detail[f'{prefix}/{name}_{k}'] = float(f'{v:.4f}')
            for k, v in summary['tp_errors'].items():
                detail[f'{prefix}/{self.ErrNameMapping[k]}'] = float(
                    f'{v:.4f}')
        detail[f'{prefix}/NDS'] = summary['nd_score']
        detail[f'{prefix}/mAP'] = summary['mean_ap']
        return detail
