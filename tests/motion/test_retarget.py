"""Human motion onto a robot (``primebot motion retarget``): readers, contacts, IK, typed errors.

Every skeleton here is made by the test (no network, no data set): a q1 pose turned into SMPL-H
joint positions, a BVH written by hand, a sliding foot.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from primebot.pipeline.cli import main
from primebot.pipeline.hooks.host import reset_host
from primebot.pipeline.motion.balance import balance_margins
from primebot.pipeline.motion.format import load_motion
from primebot.pipeline.motion.frame_runs import runs
from primebot.pipeline.motion.retarget.foot_contacts import (
    detect_contacts,
    horizontal_speed,
    lock_contacts,
    skate,
)
from primebot.pipeline.motion.retarget.human import HumanMotion, RetargetError
from primebot.pipeline.motion.retarget.maps import guess_map, load_map, write_guessed_maps
from primebot.pipeline.motion.retarget.retarget import retarget_human
from primebot.pipeline.motion.retarget.skeletons import SKELETONS, SMPLH, detect_skeleton
from primebot.pipeline.motion.retarget.sources import load_human
from primebot.pipeline.motion.validate import validate_motion
from primebot.pipeline.robot.kinematics import (
    geom_vertical_extent,
    posed_frames,
    robot_geoms,
    standing_height,
)
from primebot.pipeline.robot.model import robot_indices

FPS = 50.0
# SMPL-H joint → the q1 body whose origin stands in for it in the synthetic person
STAND_INS = {
    "Pelvis": "pelvis", "L_Hip": "left_hip_pitch_link", "L_Knee": "left_knee_link",
    "L_Ankle": "left_ankle_roll_link",
    "R_Hip": "right_hip_pitch_link", "R_Knee": "right_knee_link",
    "R_Ankle": "right_ankle_roll_link",
    "Spine": "waist_yaw_link", "Chest": "torso_link",
    "L_Shoulder": "left_shoulder_pitch_link", "L_Elbow": "left_elbow_link",
    "L_Wrist": "left_hand_link",
    "R_Shoulder": "right_shoulder_pitch_link", "R_Elbow": "right_elbow_link",
    "R_Wrist": "right_hand_link",
}  # fmt: skip
POSITION_MAP = "skeleton: smplh\njoints:\n" + "".join(
    f"  {joint}: {{body: {body}, position: {10 if 'Ankle' in joint else 1}, orientation: "
    f"{2 if 'Ankle' in joint else 0}}}\n"
    for joint, body in STAND_INS.items() if joint not in ("Spine", "Chest")
)


def robot_trajectory(spec, frames: int = 60) -> np.ndarray:
    """[T, J] a slow q1 motion: knees and hips bend (a small squat) while both arms swing
    forward."""
    u = 0.5 - 0.5 * np.cos(np.linspace(0, np.pi, frames))[:, None]
    q = np.tile(spec.default_joint_pos, (frames, 1))
    for name, amount in (("left_knee_joint", 0.5), ("right_knee_joint", 0.5),
                         ("left_hip_pitch_joint", -0.25),
                         ("right_hip_pitch_joint", -0.25), ("left_ankle_pitch_joint", -0.25),
                         ("right_ankle_pitch_joint", -0.25), ("left_shoulder_pitch_joint", -0.9),
                         ("right_shoulder_pitch_joint", -0.6), ("left_elbow_joint", -0.6)):
        q[:, spec.joint_names.index(name)] += amount * u[:, 0]
    return q


def synthetic_person(model, spec, joint_pos: np.ndarray,
                     source) -> tuple[HumanMotion, dict[str, np.ndarray]]:
    """SMPL-H joint positions where the robot's bodies are (the root level, the lowest foot on z =
    0), and the robot bodies' own tracks; joints without a stand-in sit at plausible places beside
    them."""
    indices = robot_indices(model, spec)
    frames = len(joint_pos)
    root = np.zeros((frames, 3))
    quat = np.tile([1.0, 0, 0, 0], (frames, 1))
    bodies = {b: np.empty((frames, 3)) for b in set(STAND_INS.values()) | {"torso_link"}}
    lowest = np.empty(frames)
    for t, data in posed_frames(model, indices, root, quat, joint_pos):
        for b in bodies:
            bodies[b][t] = data.body(b).xpos
        lowest[t] = geom_vertical_extent(model, data)[0][robot_geoms(model)].min()
    for b in bodies:
        bodies[b][:, 2] -= lowest[:, None][:, 0]
    positions = np.zeros((frames, len(SMPLH.joints), 3))
    place = dict(STAND_INS)
    for j, name in enumerate(SMPLH.joints):
        if name in place:
            positions[:, j] = bodies[place[name]]
    at = SMPLH.joints.index
    positions[:, at("L_Toe")] = positions[:, at("L_Ankle")] + [0.08, 0.0, -0.03]
    positions[:, at("R_Toe")] = positions[:, at("R_Ankle")] + [0.08, 0.0, -0.03]
    positions[:, at("Neck")] = bodies["torso_link"] + [0.0, 0.0, 0.2]
    positions[:, at("Head")] = bodies["torso_link"] + [0.0, 0.0, 0.25]
    for name in SMPLH.joints:  # fingers and thorax: at their wrist or chest
        if not positions[:, at(name)].any():
            positions[:, at(name)] = positions[:, at(("L_" if name.startswith("L_") else "R_")
                                                     + "Wrist")] \
                if "Thorax" not in name and name[:2] in ("L_", "R_") else bodies["torso_link"]
    return HumanMotion(SMPLH.joints, positions, FPS, source, SMPLH), bodies


def test_a_robot_pose_turned_into_human_joints_retargets_back(spec, model, tmp_path):
    joint_pos = robot_trajectory(spec)
    human, bodies = synthetic_person(model, spec, joint_pos, tmp_path / "robot_as_person.npz")
    map_file = tmp_path / "q1_positions.yaml"
    map_file.write_text(POSITION_MAP, encoding="utf-8")
    done = retarget_human(human, spec, map_path=map_file, height=standing_height(model),
                          model=model)
    assert done.quality.scale == pytest.approx(1.0)
    motion = done.motion
    assert motion.fps == 50 and motion.num_frames == len(joint_pos)
    for joint, body in STAND_INS.items():
        if joint in ("Spine", "Chest"):
            continue
        b = motion.body_names.index(body)
        gap = np.linalg.norm(motion.body_pos_w[:, b] - bodies[body], axis=-1)
        assert gap.max() < 0.02, (body, gap.max())
    for name in ("left_knee_joint", "right_knee_joint", "left_elbow_joint"):
        k = spec.joint_names.index(name)
        assert np.abs(motion.joint_pos[:, k] - joint_pos[:, k]).max() < 0.15, name
    quality = done.quality
    assert (
        quality.limit_violations == 0
        and quality.penetration_cm <= 1.0
        and quality.worst_skate_cm <= 2.0
    )
    assert validate_motion(motion, spec, model).ok



def test_legs_keep_their_length_when_the_person_is_taller_for_them(spec, model, tmp_path):
    """The same squat by a person whose body above the pelvis is 0.25 m longer than the robot's
    (legs of the robot's length, so a smaller height ratio): the pelvis and the legs are scaled by
    leg length (1 here) and targeted where the robot's were (the default); scaled by height, the
    pelvis is targeted low and the robot crouches."""
    joint_pos = robot_trajectory(spec)
    human, bodies = synthetic_person(model, spec, joint_pos, tmp_path / "long_body.npz")
    legs = ("Pelvis", "L_Hip", "L_Knee", "L_Ankle", "L_Toe", "R_Hip", "R_Knee", "R_Ankle", "R_Toe")
    upper = [j for j, name in enumerate(human.names) if name not in legs]
    human.positions[:, upper, 2] += 0.25
    map_file = tmp_path / "q1_positions.yaml"
    map_file.write_text(POSITION_MAP, encoding="utf-8")
    height = standing_height(model)
    done = retarget_human(human, spec, map_path=map_file, height=height + 0.25, model=model)
    assert done.quality.scale == pytest.approx(height / (height + 0.25))
    assert done.quality.leg_scale == pytest.approx(1.0, abs=1e-3)
    targets = done.targets
    for joint in ("Pelvis", "L_Knee", "R_Knee", "L_Ankle", "R_Ankle"):
        body = STAND_INS[joint]
        gap = np.linalg.norm(targets.positions[:, targets.bodies.index(body)] - bodies[body],
                             axis=-1)
        assert gap.max() < 0.01, (joint, gap.max())
    # around the pelvis, the height ratio: the shoulders 0.25 m higher above it, scaled
    body = STAND_INS["L_Shoulder"]
    above = (targets.positions[:, targets.bodies.index(body), 2]
             - targets.positions[:, targets.bodies.index("pelvis"), 2])
    expected = (bodies[body][:, 2] + 0.25 - bodies["pelvis"][:, 2]) * done.quality.scale
    assert np.abs(above - expected).max() < 0.01
    # scaled by height alone, the pelvis is targeted low and the robot crouches
    default = retarget_human(human, spec, map_path=map_file, height=height + 0.25, model=model,
                             scale="height")
    assert default.quality.leg_scale == default.quality.scale == done.quality.scale
    low = (bodies["pelvis"][:, 2]
           - default.targets.positions[:, default.targets.bodies.index("pelvis"), 2])
    assert low.min() > 0.03
    with pytest.raises(RetargetError, match="--scale"):
        retarget_human(human, spec, map_path=map_file, model=model, scale="arms")


def test_a_lean_over_the_toes_is_brought_back_over_the_feet(spec, model, tmp_path):
    """The person's upper body moves 12 cm forward over still feet (a lean a person's longer feet
    carry): retargeted as it is, q1's zero-moment point leaves its feet; balanced, it stays over
    them and the feet stay planted."""
    frames = 75
    ramp = np.minimum(1.0, np.linspace(0.0, 1.5, frames))
    ramp = 0.5 - 0.5 * np.cos(np.pi * ramp)
    standing = np.tile(spec.default_joint_pos, (frames, 1))
    human, _ = synthetic_person(model, spec, standing, tmp_path / "lean.npz")
    upper = [j for j, name in enumerate(human.names)
             if not any(k in name for k in ("Ankle", "Toe"))]
    human.positions[:, upper, 0] += 0.12 * ramp[:, None]
    map_file = tmp_path / "q1_positions.yaml"
    map_file.write_text(POSITION_MAP, encoding="utf-8")
    indices = robot_indices(model, spec)
    root = indices.root_body_id - 1
    outside, steps = {}, {}
    for balance in (False, True):
        done = retarget_human(human, spec, map_path=map_file, height=standing_height(model),
                              model=model, balance=balance)
        m = done.motion
        margins = balance_margins(model, indices, indices.feet_body_ids, m.body_pos_w[:, root],
                                  m.body_quat_w[:, root], m.joint_pos, m.fps)
        outside[balance] = (int((margins < 0).sum()), -float(np.nanmin(margins)))
        steps[balance] = float(np.abs(np.diff(m.joint_pos, axis=0)).max())
        assert done.quality.worst_skate_cm <= 2.0 and done.quality.penetration_cm <= 1.0
    assert outside[False][0] >= 20 and outside[False][1] > 0.04, outside
    assert outside[True][0] <= 3 and outside[True][1] < 0.03, outside
    # re-solving a frame for its centre of mass swings no joint between frames (rad per frame)
    assert steps[True] <= steps[False] + 0.02, steps
    assert any(note.startswith("balance: ZMP outside") for note in done.quality.notes)

def test_a_hand_reaching_below_the_floor_rests_on_it_and_the_feet_stay_planted(spec, model,
                                                                               tmp_path):
    """The person reaches 25 cm forward to 5 cm below the robot's floor (a box on the floor, on a
    robot whose arms are longer for its legs): nothing may go through the floor, and raising the
    whole robot to clear the hand hung the planted feet in the air (7.7 cm here; the G1's OMOMO
    sub3, 2 cm for half a second). The hand's target is raised instead: it rests on the floor."""
    frames = 40
    human, _ = synthetic_person(model, spec, np.tile(spec.default_joint_pos, (frames, 1)),
                                tmp_path / "reach.npz")
    reach = np.clip(1.5 * np.sin(np.linspace(0.0, np.pi, frames)), 0.0, 1.0)[:, None]
    for j, name in enumerate(human.names):
        if name in ("L_Wrist", "R_Wrist") or name.startswith(("L_Index", "R_Index", "L_Middle",
                                                              "R_Middle", "L_Ring", "R_Ring",
                                                              "L_Pinky", "R_Pinky", "L_Thumb",
                                                              "R_Thumb")):
            floor = human.positions[:, j] + [0.25, 0.0, 0.0]
            floor[:, 2] = -0.05
            human.positions[:, j] += reach * (floor - human.positions[:, j])
    map_file = tmp_path / "q1_reach.yaml"  # the hands pulled harder than the pelvis: they get there
    map_file.write_text(POSITION_MAP.replace("hand_link, position: 1", "hand_link, position: 20")
                        .replace("pelvis, position: 1", "pelvis, position: 0.1"), encoding="utf-8")
    done = retarget_human(human, spec, map_path=map_file, height=standing_height(model),
                          model=model)
    indices, m, mask = robot_indices(model, spec), done.motion, robot_geoms(model)
    on_foot = np.isin(model.geom_bodyid, indices.feet_body_ids)
    lows = np.array([geom_vertical_extent(model, data)[0]
                     for _, data in posed_frames(model, indices, m.body_pos_w[:, 0],
                                                 m.body_quat_w[:, 0], m.joint_pos)])
    assert lows[:, mask & on_foot].min(axis=1).max() < 0.01  # planted throughout
    hands = mask & np.isin(model.geom_bodyid, [model.body(f"{side}_hand_link").id
                                               for side in ("left", "right")])
    assert lows[:, hands].min() > -0.005 and lows[frames // 2, hands].min() < 0.01  # on the floor
    assert any(note.startswith("floor: ") for note in done.quality.notes)


def test_feet_keep_their_sides_when_the_first_frame_has_the_pelvis_over_one_foot(spec, model,
                                                                                 tmp_path):
    """Walking, the pelvis is over the stance foot, so both feet can be on one side of it in the
    clip's first frame: the sides come from the robot's standing pose, and every foot is measured
    (a first frame once named both feet "right": one foot's contacts then drove both feet's floor
    level, and its skate was never measured)."""
    frames = 30
    standing = np.tile(spec.default_joint_pos, (frames, 1))
    human, bodies = synthetic_person(model, spec, standing, tmp_path / "weight_left.npz")
    feet_y = [bodies[f"{side}_ankle_roll_link"][0, 1] for side in ("left", "right")]
    upper = [j for j, name in enumerate(human.names)
             if not any(k in name for k in ("Ankle", "Toe"))]
    human.positions[:, upper, 1] += max(feet_y) - bodies["pelvis"][0, 1] + 0.02
    map_file = tmp_path / "q1_positions.yaml"
    map_file.write_text(POSITION_MAP, encoding="utf-8")
    done = retarget_human(human, spec, map_path=map_file, height=standing_height(model),
                          model=model, balance=False)
    pelvis, feet = (done.motion.body_pos_w[0, done.motion.body_names.index(b), 1]
                    for b in ("pelvis", "left_ankle_roll_link"))
    assert pelvis > feet  # the case: both feet are to the right of the pelvis
    assert sorted(done.quality.skate_cm) == ["left", "right"]
    assert done.quality.contact_phases == 2


def test_a_swinging_foot_pitched_toes_down_near_the_floor_does_not_lift_the_planted_one(
        spec, model, tmp_path):
    """The person steps 25 cm forward with the right foot, toes pitched 0.8 rad down at the top of
    a 6 cm lift. The robot's sole is longer for its leg than a person's: pitched as much near the
    floor, its toe would go below it, the motion is raised to keep it out, and the planted left
    foot ends up in the air (1.8 cm here before the pitch faded towards the floor), where the
    balance check no longer counts it as support."""
    frames = 50
    human, _ = synthetic_person(model, spec, np.tile(spec.default_joint_pos, (frames, 1)),
                                tmp_path / "step.npz")
    at = human.names.index
    swing = np.zeros(frames)
    swing[10:40] = np.sin(np.linspace(0.0, np.pi, 30))
    ankle = human.positions[:, at("R_Ankle")].copy()
    ankle[:, 0] += 0.25 * np.cumsum(swing) / swing.sum()
    ankle[:, 2] += 0.06 * swing
    pitch = 0.8 * swing  # toes down
    toe = ankle + np.stack([0.08 * np.cos(pitch) - 0.03 * np.sin(pitch), np.zeros(frames),
                            -0.03 * np.cos(pitch) - 0.08 * np.sin(pitch)], axis=1)
    human.positions[:, at("R_Ankle")], human.positions[:, at("R_Toe")] = ankle, toe
    map_file = tmp_path / "q1_positions.yaml"
    map_file.write_text(POSITION_MAP, encoding="utf-8")
    done = retarget_human(human, spec, map_path=map_file, height=standing_height(model),
                          model=model, balance=False)
    assert not done.targets.contact["right"][20:30].any() and done.targets.contact["left"].all()
    indices = robot_indices(model, spec)
    left = indices.feet_body_ids[[model.body(int(f)).name for f in indices.feet_body_ids]
                                 .index("left_ankle_roll_link")]
    m, mask = done.motion, robot_geoms(model)
    on_left = mask & (model.geom_bodyid == left)
    heights = [geom_vertical_extent(model, data)[0][on_left].min()
               for _, data in posed_frames(model, indices, m.body_pos_w[:, 0], m.body_quat_w[:, 0],
                                           m.joint_pos)]
    assert max(heights) < 0.005, max(heights)  # on the floor (within the 1 cm of support)
    assert done.quality.penetration_cm <= 1.0


def test_both_feet_stand_on_the_floor_when_the_persons_ankles_rest_at_different_heights(
        spec, model, tmp_path):
    """A person's two ankle joints rarely rest at one height (an OMOMO subject's differ by 1.6 cm);
    mapped through one floor level, one planted robot foot hung a centimetre in the air, where the
    balance check no longer counts it as support. Each foot lands on its own floor."""
    frames = 30
    human, _ = synthetic_person(model, spec, np.tile(spec.default_joint_pos, (frames, 1)),
                                tmp_path / "uneven.npz")
    for name in ("L_Ankle", "L_Toe"):
        human.positions[:, human.names.index(name), 2] += 0.02
    map_file = tmp_path / "q1_positions.yaml"
    map_file.write_text(POSITION_MAP, encoding="utf-8")
    done = retarget_human(human, spec, map_path=map_file, height=standing_height(model),
                          model=model, balance=False)
    assert done.targets.contact["left"].all() and done.targets.contact["right"].all()
    indices, m, mask = robot_indices(model, spec), done.motion, robot_geoms(model)
    lows = np.array([[geom_vertical_extent(model, data)[0][mask & (model.geom_bodyid == int(f))]
                      .min() for f in indices.feet_body_ids]
                     for _, data in posed_frames(model, indices, m.body_pos_w[:, 0],
                                                 m.body_quat_w[:, 0], m.joint_pos)])
    assert lows.max() < 0.003, lows.max(axis=0)  # both on the floor (one was 2 cm up)


BVH = """\
HIERARCHY
ROOT Hips
{
  OFFSET 0 90 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT LeftUpLeg
  {
    OFFSET 10 0 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    JOINT LeftLeg
    {
      OFFSET 0 -40 0
      CHANNELS 3 Xrotation Yrotation Zrotation
      JOINT LeftFoot
      {
        OFFSET 0 -40 0
        CHANNELS 3 Zrotation Xrotation Yrotation
        End Site
        {
          OFFSET 0 -5 10
        }
      }
    }
  }
}
MOTION
Frames: 3
Frame Time: 0.008333
0 90 0 0 0 0 0 0 0 0 0 0 0 0 0
5 90 0 0 0 0 90 90 0 0 0 0 0 0 0
5 90 0 0 0 0 0 0 0 90 0 90 0 0 0
"""


def test_a_generated_bvh_parses_offsets_channel_orders_and_frame_time(tmp_path):
    path = tmp_path / "tiny.bvh"
    path.write_text(BVH, encoding="utf-8")
    human = load_human(path, units="cm")
    assert human.names == ("Hips", "LeftUpLeg", "LeftLeg", "LeftFoot")
    assert human.fps == pytest.approx(1 / 0.008333)
    # frame 0: the offsets summed, cm → m, BVH's y up → our z up (x stays, y → z, z → −y)
    np.testing.assert_allclose(human.positions[0],
                               [[0, 0, 0.9], [0.1, 0, 0.9], [0.1, 0, 0.5], [0.1, 0, 0.1]],
                               atol=1e-6)
    # frame 1: the root moved 5 cm along x; the hip turned Z 90° then X 90° in its "Z X Y" order
    # (R = Rz·Rx): the thigh, straight down, ends up along BVH's −z, our +y (the other order: along
    # +x)
    np.testing.assert_allclose(human.positions[1, 2:], [[0.15, 0.4, 0.9], [0.15, 0.8, 0.9]],
                               atol=1e-5)
    # frame 2: the knee turned X 90° and Z 90° in its "X Y Z" order (R = Rx·Ry·Rz): the shin along
    # +x
    np.testing.assert_allclose(human.positions[2, 3], [0.55, 0.0, 0.5], atol=1e-5)


def test_units_of_a_bvh_are_found_from_the_skeletons_size(tmp_path):
    path = tmp_path / "person.bvh"
    path.write_text(BVH.replace("OFFSET 0 90 0", "OFFSET 0 170 0").replace("-40", "-80")
                    .replace(" 90 0 0 0 0", " 170 0 0 0 0"), encoding="utf-8")
    human = load_human(path)  # a 1.6 m figure in centimetres
    assert any("cm" in n for n in human.notes)
    assert human.positions[0, 0, 2] == pytest.approx(1.7)
    assert human.positions[0, 3, 2] == pytest.approx(0.1)


def test_foot_skate_removal_holds_a_sliding_foot_still():
    fps = 50.0
    t = np.arange(150) / fps
    swing = (t % 1.0) >= 0.6  # planted 0.6 s, swinging 0.4 s, each second
    track = np.zeros((150, 3))
    # a planted foot that slides 10 cm/s (a capture or scaling error); the swing moves 0.3 m forward
    track[:, 0] = np.cumsum(np.where(swing, 0.75, 0.1)) / fps
    track[:, 2] = np.where(swing, 0.08 * np.sin(np.pi * ((t % 1.0) - 0.6) / 0.4), 0.0)
    contact = detect_contacts(track[:, 2], horizontal_speed(track, fps), fps)
    phases = runs(contact)
    assert len(phases) == 3
    for (start, end), want in zip(phases, (0, 50, 100), strict=True):
        assert abs(start - want) <= 1 and abs(end - (want + 30)) <= 1
    assert skate(track, contact).min() > 0.05  # 10 cm/s for 0.6 s
    held = lock_contacts(track, contact, fps, rest_z=0.0)
    assert skate(held, contact).max() < 1e-9 and np.abs(held[contact, 2]).max() < 1e-12
    assert np.abs(np.diff(held[:, 0])).max() < 0.05  # blended in and out: no jumps


def _npz(tmp_path, positions, names=None, height=1.7, name="person.npz"):
    path = tmp_path / name
    arrays = {"global_joint_positions": positions}
    if height is not None:
        arrays["height"] = np.array(height)
    if names is not None:
        arrays["joint_names"] = np.array(names, dtype=str)
    np.savez(path, **arrays)
    return path


def _standing_person(frames: int = 20) -> np.ndarray:
    """[T, 22, 3] SMPL-X body joints of a 1.7 m person standing at the origin facing +x (metres)."""
    z = {"Pelvis": 0.95, "L_Hip": 0.88, "R_Hip": 0.88, "Spine1": 1.05, "L_Knee": 0.5, "R_Knee": 0.5,
         "Spine2": 1.18,
         "L_Ankle": 0.08, "R_Ankle": 0.08, "Spine3": 1.3, "L_Foot": 0.02, "R_Foot": 0.02,
         "Neck": 1.45,
         "L_Collar": 1.4, "R_Collar": 1.4, "Head": 1.51, "L_Shoulder": 1.38, "R_Shoulder": 1.38,
         "L_Elbow": 1.1,
         "R_Elbow": 1.1, "L_Wrist": 0.85, "R_Wrist": 0.85}  # fmt: skip
    names = SKELETONS["smplx"].joints
    one = np.array([[0.12 if n in ("L_Foot", "R_Foot") else 0.0,
                     (0.1 if n.startswith("L_") else -0.1 if n.startswith("R_") else 0.0)
                     * (2.0 if "Shoulder" in n or "Elbow" in n or "Wrist" in n else 1.0), z[n]]
                     for n in names])
    return np.tile(one, (frames, 1, 1))


def run(capsys, *args):
    reset_host()
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_retarget_command_writes_a_valid_motion_and_prints_the_figures(capsys, clean_env, tmp_path):
    source = _npz(tmp_path, _standing_person())
    out = tmp_path / "stand_q1.npz"
    code, stdout, err = run(capsys, "motion", "retarget", str(source), "--fps", "30", "-o",
                            str(out), "--json")
    assert code == 0, err
    report = json.loads(stdout)
    assert report["validation"]["valid"] and report["quality"]["limit_violations"] == 0
    assert report["quality"]["stature_m"] == pytest.approx(1.7)
    motion = load_motion(out)
    assert motion.fps == 50 and motion.num_frames == 32  # 19 frames at 30 fps = 0.633 s


def test_start_and_end_retarget_a_window_of_the_source(capsys, clean_env, tmp_path):
    """--start / --end cut a clip that starts mid-motion; a window outside it is a typed error."""
    source = _npz(tmp_path, _standing_person())  # 20 frames at 30 fps: 0 to 0.633 s
    out = tmp_path / "window_q1.npz"
    code, stdout, err = run(capsys, "motion", "retarget", str(source), "--fps", "30", "-o",
                            str(out), "--start", "0.1", "--end", "0.5", "--json")
    assert code == 0, err
    assert "frames 3–15 of the source (0.10–0.50 s)" in json.loads(stdout)["quality"]["notes"]
    assert load_motion(out).num_frames == 21  # 13 frames at 30 fps = 0.4 s
    for start, end, match in (("0.5", "0.2", "is not a window of the clip"),
                              ("0.62", None, "fewer than 2 frames")):
        window = ["--start", start] + (["--end", end] if end else [])
        code, _, err = run(capsys, "motion", "retarget", str(source), "--fps", "30", "-o",
                           str(out), *window)
        assert code == 5 and match in err and "fix:" in err, err


@pytest.mark.parametrize(
    "case, match",
    [
        ("missing_joint", "joint 'L_Wristt' is not in .*did you mean 'L_Wrist'"),
        ("non_finite", "joint 'L_Knee' is NaN or infinite at frame 7"),
        ("centimetres", "look like centimetres"),
        ("no_feet", "has no left or right foot"),
        ("zero_fps", "frame rate 0.0 is not a positive number"),
    ],
)
def test_bad_input_is_a_typed_error_naming_the_file_and_the_fix(spec, model, tmp_path, case, match):
    positions, names, fps, map_path = (
        _standing_person(),
        list(SKELETONS["smplx"].joints),
        30.0,
        None,
    )
    if case == "missing_joint":
        map_path = tmp_path / "typo.yaml"
        map_path.write_text(textwrap.dedent("""\
            skeleton: smplx
            joints:
              L_Ankle: {body: left_ankle_roll_link, position: 10}
              R_Ankle: {body: right_ankle_roll_link, position: 10}
              L_Wristt: {body: left_hand_link, position: 1}
            """), encoding="utf-8")
    elif case == "non_finite":
        positions[7, names.index("L_Knee"), 1] = np.nan
    elif case == "centimetres":
        positions = positions * 100
    elif case == "no_feet":  # an upper-body capture, with a map of its own
        keep = [k for k, n in enumerate(names) if "Ankle" not in n and "Foot" not in n]
        positions, names = positions[:, keep], [names[k] for k in keep]
        map_path = tmp_path / "upper.yaml"
        map_path.write_text(textwrap.dedent("""\
            joints:
              Pelvis: {body: pelvis, position: 1}
              L_Wrist: {body: left_hand_link, position: 1}
            roles: {pelvis: Pelvis, head: Head, left_wrist: L_Wrist}
            """), encoding="utf-8")
    elif case == "zero_fps":
        fps = 0.0
    source = _npz(tmp_path, positions, names=names, height=None if case == "centimetres" else 1.7)
    with pytest.raises(RetargetError, match=match) as caught:
        human = load_human(source, fps=fps)
        retarget_human(human, spec, map_path=map_path, model=model)
    assert str(source) in str(caught.value) or str(map_path) in str(caught.value)
    assert caught.value.fix and caught.value.exit_code == 5


class Payload:
    """Any Python object: saving it makes the file need pickle to load."""


def test_a_pt_file_that_needs_pickle_is_refused_by_name(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "objects.pt"
    torch.save({"joints": torch.zeros(3, 52, 3), "meta": Payload()}, path)
    with pytest.raises(RetargetError, match="weights_only=True") as caught:
        load_human(path, fps=30)
    assert str(path) in str(caught.value)
    plain = tmp_path / "joints.pt"
    torch.save(torch.zeros(4, 52, 3), plain)
    assert load_human(plain, fps=30).positions.shape == (4, 52, 3)


def test_skeletons_are_detected_from_joint_names():
    for skeleton in SKELETONS.values():
        assert detect_skeleton(skeleton.joints) is skeleton
    assert detect_skeleton(["a", "b"]) is None


def test_the_guessed_q1_map_pairs_roles_with_the_right_bodies(spec, model, tmp_path):
    guessed = guess_map(model, SMPLH, root="pelvis", anchor="torso_link", feet=spec.feet,
                        hands=("left_hand_link", "right_hand_link"))
    shipped = load_map(spec.extra["retarget_maps"] / "smplh.yaml")
    assert {e.joint: e.body for e in guessed.entries} == {e.joint: e.body for e in shipped.entries}
    written = write_guessed_maps(model, tmp_path, root="pelvis", anchor="torso_link",
                                 feet=spec.feet,
                                 hands=("left_hand_link", "right_hand_link"))
    assert sorted(p.stem for p in written) == sorted(SKELETONS)
    assert all(line.endswith("# REVIEW") for line in written[0].read_text().splitlines()
               if "body:" in line)
    for path in written:
        assert load_map(path).entries


def test_robots_new_ships_guessed_maps_that_retarget_finds(capsys, clean_env, spec, tmp_path):
    folder = tmp_path / "primebot-q1copy"
    code, out, err = run(capsys, "robots", "new", "q1copy", "--mjcf", str(spec.mjcf), "-o",
                         str(folder))
    assert code == 0, err
    assert "joint maps for `motion retarget` (REVIEW)" in out
    maps = folder / "primebot_q1copy" / "model" / "retarget"
    guessed = load_map(maps / "smplh.yaml")
    shipped = load_map(spec.extra["retarget_maps"] / "smplh.yaml")
    assert [(e.joint, e.body) for e in guessed.entries] == [(e.joint, e.body)
                                                            for e in shipped.entries]
    assert "# REVIEW" in (maps / "lafan.yaml").read_text(encoding="utf-8")
