"""Foreign-style MJCFs of our quadruped, built from our own ``quadruped.xml`` (no fetched
model in the repository): joints renamed, legs reordered, position servos swapped for
torque motors, another timestep, as MuJoCo Menagerie's and Unitree's Go2 differ from ours."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sim2real.sim.quadruped import constants as C

LEG_ORDER = ("FL", "FR", "RL", "RR")
"""Menagerie's body order: the legs' joints come in this order in ``qpos``."""


def foreign_xml(prefix: str = "go2_", motors: bool = True, timestep: float = 0.002, legs: tuple[str, ...] = LEG_ORDER,
                free_joint: bool = True, trunk_mass: float = C.TRUNK_MASS, home_height: float | None = None) -> str:
    """Our model's text, changed as a foreign Go2 model is, with a floor."""
    xml = C.XML_PATH.read_text()
    xml = re.sub(r"<sensor>.*?</sensor>", "", xml, flags=re.S)  # a foreign model's sensors are its own
    xml = re.sub(r"<keyframe>.*?</keyframe>", "", xml, flags=re.S)  # a home only where asked
    xml = re.sub(r'"([FR][RL]_(?:hip|thigh|calf)_joint)"', rf'"{prefix}\1"', xml)
    starts = [xml.index(f'<body name="{leg}_hip"') for leg in C.LEGS]
    end = xml.index("    </body>\n  </worldbody>")
    blocks = dict(zip(C.LEGS, (xml[a:b] for a, b in zip(starts, [*starts[1:], end], strict=True)), strict=True))
    xml = xml[:starts[0]] + "".join(blocks[leg] for leg in legs) + xml[end:]
    xml = xml.replace('timestep="0.005"', f'timestep="{timestep}"')
    xml = xml.replace('mass="6.921"', f'mass="{trunk_mass}"')
    if not free_joint:
        xml = xml.replace('<freejoint name="root"/>', "")
    if motors:  # MuJoCo <motor>: torque = ctrl, within the drive's peak torque
        def motor(match: re.Match[str]) -> str:
            limit = C.CALF_TORQUE if match.group(1).endswith("calf") else C.HIP_TORQUE
            return f'<motor name="{match.group(1)}" joint="{match.group(2)}" ctrlrange="-{limit} {limit}"/>'

        xml = re.sub(r'<position name="(\w+)" joint="(\w+)" class="\w+"/>', motor, xml)
    floor = '  <worldbody>\n    <geom name="floor" type="plane" size="0 0 0.05"/>\n'
    xml = xml.replace("  <worldbody>\n", floor, 1)
    if home_height is not None:
        pose = " ".join(["0 0.9 -1.8"] * 4)
        xml = xml.replace("</mujoco>", f'  <keyframe><key name="home" qpos="0 0 {home_height} 1 0 0 0 {pose}"/>'
                                       "</keyframe>\n</mujoco>")
    return xml


def write_foreign(directory: Path, name: str = "go2.xml", **changes: Any) -> Path:
    path = directory / name
    path.write_text(foreign_xml(**changes))
    return path


def prefix_map(prefix: str = "go2_") -> dict[str, str]:
    """The joint map of :func:`foreign_xml`'s renaming."""
    return {n: prefix + n for n in C.JOINT_NAMES}
