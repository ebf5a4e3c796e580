"""The generated nuScenes data: simulated drives (``scene``), their sensor
data (``render``), the fixed tables and each version's scene names
(``tables``), the nuScenes tables and files (``writer``) and mmdet3d's
own converter run on them (``converter``)."""
