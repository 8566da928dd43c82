"""Human motion onto a robot (``primebot motion retarget``): docs/motions.md, "From human motion".

One concept per module, bottom first:

* ``skeletons``: the human skeletons we know by their joint names (SMPL-H, SMPL-X, LAFAN1, CMU),
  each joint's role (pelvis, left ankle, ...), and detecting which one a file holds;
* ``human``: ``HumanMotion`` (global joint positions T × J × 3 in metres, z up) and its checks;
* ``sources``: the readers (BVH through bvhio, the ``global_joint_positions`` + ``height`` .npz,
  SMPL-H ``.pt`` tensors loaded with ``torch.load(weights_only=True)``, torch imported there only);
* ``maps``: the joint map (human joint → robot body, position and orientation weights), finding a
  robot's built-in map, and guessing one from a model (``guess_map``, what ``robots new`` writes);
* ``contacts``: foot contact from height and speed, and foot-skate removal while in contact;
* ``targets``: scaled, floored, heading-aligned, smoothed targets at 50 fps for each mapped body;
* ``ik``: whole-body inverse kinematics with mink on the robot's own MJCF (also used by the
  keyframe author's ``ik:`` targets);
* ``quality``: the figures a retarget is judged by (skate, penetration, limits, residuals);
* ``retarget``: the whole path, source file to motion.

Nothing here imports torch at module level (docs/architecture.md §1: ``motion`` is torch-free).
"""
