"""HIL-SERL: sample-efficient RL for arms with demonstrations and human corrections.

Pieces (docs/hil_serl.md is the user's guide):

- :mod:`.config`      dataclass configs (learner, actor, environment), one docstring per field
- :mod:`.env`         pixel + proprioception observations, sparse reward, action safety
- :mod:`.buffers`     replay buffers and the 50/50 online/demo batch mixer
- :mod:`.networks`    CNN encoder (or frozen pretrained backbone), DrQ shift, actor, ensemble critics
- :mod:`.sac`         the RLPD-style SAC learner (optional discrete gripper critic)
- :mod:`.devices`     intervention devices: scripted operator, keyboard, gamepad, SpaceMouse
- :mod:`.demos`       demonstration episodes in HDF5, one file per episode, written atomically
- :mod:`.classifier`  binary success classifier giving the sparse reward
- :mod:`.transport`   ZeroMQ actor/learner transport (acknowledged transitions, pushed weights)
- :mod:`.wire`        checks on every inbound frame: sizes, header ranges, HMAC, zip-bomb-safe npz
- :mod:`.actor`, :mod:`.learner`  the two processes; :mod:`.loop` runs both in one process
"""
