"""The generated nuScenes data: simulated drives (``scene``), their sensor
data (``render``), the fixed tables and each version's scene names
(``tables``), the nuScenes tables and files (``writer``, which runs
mmdet3d's own converter on them: ``create_data.converter``)."""
