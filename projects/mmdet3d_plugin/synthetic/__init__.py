"""The generated nuScenes data: simulated drives (``scene``), their sensor
data (``render``), the fixed tables and each version's scene names
(``tables``), the nuScenes tables and files (``writer``, which prepares
their info files and GT database with ``create_data.prepare``)."""
