"""The preflight of ``tools/doctor.py``; its checks live in ``checks/``."""
