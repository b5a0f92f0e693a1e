"""Scene assembly: the robot MJCF plus the world each task needs, built with ``MjSpec``.

World geoms use ``contype=2, conaffinity=1`` so they collide with the robot's
collision geoms (``contype=1, conaffinity=2``) and never with each other.
"""

from __future__ import annotations

import mujoco

from sim2real.sim.quadruped import constants as c

WORLD_CONTYPE = 2
WORLD_CONAFFINITY = 1


def robot_spec() -> mujoco.MjSpec:
    """The robot alone (trunk, legs, servos, sensors, keyframes)."""
    spec = mujoco.MjSpec.from_file(str(c.XML_PATH))
    spec.option.timestep = c.PHYSICS_DT
    return spec


def add_lighting(spec: mujoco.MjSpec) -> None:
    """Sky gradient and a sun; only affects pictures, not physics."""
    spec.add_texture(
        name="sky",
        type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=[0.45, 0.6, 0.8],
        rgb2=[0.05, 0.08, 0.12],
        width=256,
        height=256,
    )
    spec.worldbody.add_light(
        name="sun",
        pos=[0, 0, 4],
        dir=[0.3, 0.3, -1],
        type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
        diffuse=[0.7, 0.7, 0.7],
        specular=[0.2, 0.2, 0.2],
        castshadow=True,
    )
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.4, 0.4, 0.4]
    # Fixed scale for the renderer's clipping planes; otherwise far-away geoms (parked
    # obstacle pieces, border slabs) inflate it and the near plane cuts off the floor.
    spec.stat.extent = 5.0  # 5 m also keeps the shadow map free of acne (2 m is not)
    spec.stat.center = [0.0, 0.0, 0.3]


def ground_material(spec: mujoco.MjSpec, name: str = "ground", rgb1=(0.25, 0.28, 0.32), rgb2=(0.33, 0.36, 0.4)) -> str:
    """A checker material (0.5 m squares) so motion is visible in videos."""
    spec.add_texture(
        name=name,
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        rgb1=list(rgb1),
        rgb2=list(rgb2),
        width=256,
        height=256,
    )
    mat = spec.add_material(name=name, texrepeat=[1, 1], reflectance=0.0)
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = name
    mat.texuniform = True
    return name


def world_geom(parent: mujoco.MjsBody, **attrs) -> mujoco.MjsGeom:
    """A geom that collides with the robot but not with other world geoms."""
    geom = parent.add_geom(**attrs)
    geom.contype = WORLD_CONTYPE
    geom.conaffinity = WORLD_CONAFFINITY
    geom.condim = 3
    geom.friction = [1.0, 0.02, 0.01]
    return geom


def add_flat_floor(spec: mujoco.MjSpec) -> None:
    """An infinite plane at z = 0 named ``floor``."""
    mat = ground_material(spec)
    world_geom(spec.worldbody, name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], material=mat)
