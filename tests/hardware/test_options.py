"""Backend options go through the one strict loader: a wrong type, a bad range or an
unknown key is refused naming backend_options.KEY before any link is opened (the Go2's
options once read ``"multicast": "false"`` as true)."""

from __future__ import annotations

import pytest

from sim2real.errors import ConfigError
from sim2real.hardware.backend import backend_class


@pytest.mark.parametrize(("backend", "mode", "options", "message"), [
    ("unitree_go2", "joint_pos", {"multicast": "false"}, "backend_options.multicast: expected true or false"),
    ("unitree_go2", "joint_pos", {"stand_kp": "sixty"}, "backend_options.stand_kp"),
    ("unitree_go2", "joint_pos", {"peers": "192.168.123.161"}, "backend_options.peers: expected a list"),
    ("unitree_go2", "joint_pos", {"kp": 60}, "unknown Go2 backend option"),
    ("crazyflie", "ctbr", {"link_timeout": -1}, "backend_options.link_timeout"),
    ("crazyflie", "ctbr", {"uri": "serial://x"}, "not a cflib URI"),
    ("crazyflie", "ctbr", {"descent_rate": 0.3}, "descent_descent_rate"),  # the known ones are listed prefixed
    ("ros2_control", "ee_delta", {"namespace": "/"}, "non-root ROS namespace"),
    ("ros2_control", "ee_delta", {"command_rate_hz": 0}, "backend_options.command_rate_hz"),
])
def test_bad_options_are_refused_naming_the_key(backend: str, mode: str, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        backend_class(backend)(mode, options)


def test_good_options_are_taken() -> None:
    go2 = backend_class("unitree_go2")("joint_pos", {"stand_kp": 55, "multicast": False, "peers": ["127.0.0.1"],
                                                     "release_sport_mode": False})
    assert go2.gait.stand_kp == 55.0 and go2.release_sport_mode is False
    cf = backend_class("crazyflie")("ctbr", {"descent_height_margin": 0.5, "descent_descent_rate": 0.2})
    assert cf.descent_config.height_margin == 0.5 and cf.descent_config.descent_rate == 0.2
