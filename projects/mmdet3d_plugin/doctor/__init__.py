"""The preflight of ``tools/doctor.py`` (``preflight``), its checks in
``checks/`` with what they share (``context``), and the tool's command
line (``tool``: its flags, the run and the ``--json`` file)."""
