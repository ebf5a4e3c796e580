"""The preflight of ``tools/doctor.py``; its checks live in ``checks/``."""
from .preflight import DoctorReport, doctor_parser, main, run_doctor

__all__ = ['DoctorReport', 'doctor_parser', 'main', 'run_doctor']
