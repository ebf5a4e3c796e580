"""The fixed parts of nuScenes v1.0 that :mod:`.writer` writes: the table
names, the category, attribute and visibility tables, the map locations,
and the scene names of each version (from nuscenes-devkit's own splits).
"""
from typing import Dict, Tuple

from nuscenes.utils.splits import create_splits_scenes

TABLES = ('attribute', 'calibrated_sensor', 'category', 'ego_pose', 'instance',
          'log', 'map', 'sample', 'sample_annotation', 'sample_data', 'scene',
          'sensor', 'visibility')
LOCATIONS = ('singapore-onenorth', 'boston-seaport', 'singapore-queenstown',
             'singapore-hollandvillage')

# The 23 categories of nuScenes v1.0 (name, description).
CATEGORIES = (
    ('human.pedestrian.adult', 'Adult subcategory.'),
    ('human.pedestrian.child', 'Child subcategory.'),
    ('human.pedestrian.wheelchair', 'Wheelchairs.'),
    ('human.pedestrian.stroller', 'Strollers.'),
    ('human.pedestrian.personal_mobility', 'Small electric or self-propelled '
     'vehicles.'),
    ('human.pedestrian.police_officer', 'Police officer.'),
    ('human.pedestrian.construction_worker', 'Construction worker.'),
    ('animal', 'All animals.'),
    ('vehicle.car', 'Vehicle designed primarily for personal use.'),
    ('vehicle.motorcycle', 'Gasoline or electric powered 2-wheeled vehicle.'),
    ('vehicle.bicycle', 'Human or electric powered 2-wheeled vehicle.'),
    ('vehicle.bus.bendy', 'Bendy bus subcategory.'),
    ('vehicle.bus.rigid', 'Rigid bus subcategory.'),
    ('vehicle.truck', 'Vehicles primarily designed to haul cargo.'),
    ('vehicle.construction', 'Vehicles primarily designed for construction.'),
    ('vehicle.emergency.ambulance', 'All types of ambulances.'),
    ('vehicle.emergency.police', 'All types of police vehicles.'),
    ('vehicle.trailer', 'Any vehicle trailer.'),
    ('movable_object.barrier', 'Temporary road barrier.'),
    ('movable_object.trafficcone', 'All types of traffic cones.'),
    ('movable_object.pushable_pullable', 'Objects that a pedestrian may push '
     'or pull.'),
    ('movable_object.debris', 'Movable debris or trash.'),
    ('static_object.bicycle_rack', 'Area or device intended to park or secure '
     'bicycles.'),
)

# The 8 attributes of nuScenes v1.0.
ATTRIBUTES = (
    ('vehicle.moving', 'Vehicle is moving.'),
    ('vehicle.stopped', 'Vehicle, with a driver/rider in/on it, is currently '
     'stationary but has an intent to move.'),
    ('vehicle.parked', 'Vehicle is stationary (usually for a longer duration) '
     'with no immediate intent to move.'),
    ('cycle.with_rider', 'There is a rider on the bicycle or motorcycle.'),
    ('cycle.without_rider', 'There is NO rider on the bicycle or motorcycle.'),
    ('pedestrian.sitting_lying_down', 'The human is sitting or lying down.'),
    ('pedestrian.standing', 'The human is standing.'),
    ('pedestrian.moving', 'The human is moving.'),
)

# The official visibility table; mmdet3d filters on these exact tokens.
VISIBILITIES = (('1', 'v0-40'), ('2', 'v40-60'), ('3', 'v60-80'), ('4',
                                                                   'v80-100'))
VISIBILITY_PROBS = (0.05, 0.1, 0.15, 0.7)


# ----------------------------------------------------------------------------
# Versions
# ----------------------------------------------------------------------------
# version: (devkit splits whose scenes it holds, whether it is annotated).
# The devkit selects a split's scenes by name, so these names are what its
# ``mini_train`` / ``mini_val``, ``train`` / ``val`` and ``test`` find.
VERSIONS: Dict[str, Tuple[Tuple[str, ...], bool]] = {
    'v1.0-mini': (('mini_train', 'mini_val'), True),
    'v1.0-trainval': (('train', 'val'), True),
    'v1.0-test': (('test', ), False),
}
SUPPORTED_VERSIONS = tuple(VERSIONS)


def check_version(version: str, context: str) -> None:
    """Raise a ``ValueError`` naming the versions if ``version`` is none.

    Args:
        version (str): A dataset version, e.g. ``'v1.0-trainval'``.
        context (str): Prefix of the message, e.g. the function's name.
    """
    if version not in VERSIONS:
        raise ValueError(
            f'{context}: version must be one of {SUPPORTED_VERSIONS} (the '
            "devkit's splits of that version select the generated scenes); "
            f'got {version!r}.')


def version_scene_names(version: str) -> Tuple[str, ...]:
    """The official scene names of a nuScenes version, sorted.

    Args:
        version (str): One of :data:`SUPPORTED_VERSIONS`.

    Returns:
        tuple[str]: 10 names for ``v1.0-mini``, 850 for
        ``v1.0-trainval``, 150 for ``v1.0-test``.
    """
    check_version(version, 'version_scene_names')
    scenes = create_splits_scenes(verbose=False)
    return tuple(
        sorted(name for split in VERSIONS[version][0]
               for name in scenes[split]))


def version_is_annotated(version: str) -> bool:
    """Whether a version has annotations (``v1.0-test`` has none)."""
    check_version(version, 'version_is_annotated')
    return VERSIONS[version][1]
