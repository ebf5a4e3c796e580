"""Installs the ``projects.mmdet3d_plugin`` package (use ``make install``)."""
from setuptools import find_packages, setup


def parse_requirements(path):
    with open(path) as f:
        lines = (line.split('#')[0].strip() for line in f)
        return [line for line in lines if line]


setup(
    name='mmdet3d-plugin-nus',
    version='0.1.0',
    description='Pickle-safe nuScenes data, DDP unused-parameter reports and '
    'training presets for MMDetection3D 1.x',
    packages=find_packages(include=['projects', 'projects.*']),
    python_requires='>=3.8',
    install_requires=parse_requirements('requirements/runtime.txt') +
    parse_requirements('requirements/mminstall.txt'),
    extras_require={'tests': parse_requirements('requirements/tests.txt')},
    zip_safe=False,
)
