"""Unitree's sport service (the Go2's own locomotion controller), as far as handing the
robot to low-level control and back needs it: the host's client, and the API ids the
emulator answers.

Wire protocol: the service ``sport`` of :mod:`.rpc` (``rt/api/sport/request`` /
``response``). API ids from Unitree's SDK (``unitree_sdk2``:
``include/unitree/robot/go2/sport/sport_api.hpp``, ``ROBOT_SPORT_API_ID_*``;
``unitree_sdk2_python``: ``unitree_sdk2py/go2/sport/sport_api.py``, ``SPORT_API_ID_*``):
Damp 1001, BalanceStand 1002, StopMove 1003, StandUp 1004, StandDown 1005,
RecoveryStand 1006. Each takes ``{}`` and answers with a status code (0: accepted).

StandDown lowers the body until the robot lies on its belly, legs folded, motors still
holding (sport mode keeps running). Unitree's low-level example
(``example/go2/low_level/go2_stand_example.py``) calls it before every ReleaseMode: a
robot released while standing drops.
"""

from __future__ import annotations

from cyclonedds.domain import DomainParticipant

from sim2real.hardware.go2.rpc import RpcClient

SERVICE = "sport"
DAMP, BALANCE_STAND, STOP_MOVE, STAND_UP, STAND_DOWN, RECOVERY_STAND = 1001, 1002, 1003, 1004, 1005, 1006


class SportClient(RpcClient):
    """The host's side."""

    def __init__(self, dp: DomainParticipant) -> None:
        super().__init__(dp, SERVICE)

    def stand_down(self, timeout: float) -> int:
        """Ask the robot to lie down; the status code (the motion takes about a second
        more: watch ``rt/lowstate`` for the lying pose)."""
        return self.call(STAND_DOWN, timeout)[0]
