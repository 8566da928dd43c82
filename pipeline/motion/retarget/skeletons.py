"""The human skeletons a retarget reads, known by their joint names.

A skeleton is a list of joint names and the *role* each body-carrying joint plays (pelvis, left
knee, ...). Roles let ``maps.guess_map`` pair a skeleton with any robot, let ``targets`` build
segment orientations (pelvis from the hips, chest from the shoulders, feet from ankle and toe), and
let ``contacts`` find the feet. Names are facts of each data set's files: SMPL-H in the 52-joint
order of the OMOMO/InterMimic tensors, SMPL-X's 22 body joints (AMASS), LAFAN1's and CMU's BVH.
"""

from __future__ import annotations

from dataclasses import dataclass

ROLES = (
    "pelvis", "spine", "chest", "neck", "head",
    "left_hip", "left_knee", "left_ankle", "left_toe",
    "right_hip", "right_knee", "right_ankle", "right_toe",
    "left_shoulder", "left_elbow", "left_wrist",
    "right_shoulder", "right_elbow", "right_wrist",
)  # fmt: skip
"""What a joint does in the body, independent of its name."""

FOOT_ROLES = {"left": ("left_ankle", "left_toe"), "right": ("right_ankle", "right_toe")}


@dataclass(frozen=True)
class Skeleton:
    name: str
    joints: tuple[str, ...]
    """Every joint name, in the order the format stores them (where it has one)."""
    roles: dict[str, str]
    """role → joint name, for the roles this skeleton has."""
    up: str = "z"
    """The up axis the format's files use (BVH: y)."""
    units: str = "m"

    def joint(self, role: str) -> str | None:
        return self.roles.get(role)


def _fingers(prefix: str) -> list[str]:
    return [f"{prefix}{finger}{k}" for finger in ("Index", "Middle", "Pinky", "Ring", "Thumb")
            for k in (1, 2, 3)]


SMPLH = Skeleton(
    "smplh",
    (
        "Pelvis", "L_Hip", "L_Knee", "L_Ankle", "L_Toe", "R_Hip", "R_Knee", "R_Ankle", "R_Toe",
        "Torso", "Spine", "Chest", "Neck", "Head",
        "L_Thorax", "L_Shoulder", "L_Elbow", "L_Wrist", *_fingers("L_"),
        "R_Thorax", "R_Shoulder", "R_Elbow", "R_Wrist", *_fingers("R_"),
    ),
    {
        "pelvis": "Pelvis", "spine": "Spine", "chest": "Chest", "neck": "Neck", "head": "Head",
        "left_hip": "L_Hip", "left_knee": "L_Knee", "left_ankle": "L_Ankle", "left_toe": "L_Toe",
        "right_hip": "R_Hip", "right_knee": "R_Knee", "right_ankle": "R_Ankle",
        "right_toe": "R_Toe",
        "left_shoulder": "L_Shoulder", "left_elbow": "L_Elbow", "left_wrist": "L_Wrist",
        "right_shoulder": "R_Shoulder", "right_elbow": "R_Elbow", "right_wrist": "R_Wrist",
    },
)
SMPLX = Skeleton(
    "smplx",
    (
        "Pelvis", "L_Hip", "R_Hip", "Spine1", "L_Knee", "R_Knee", "Spine2", "L_Ankle", "R_Ankle",
        "Spine3", "L_Foot", "R_Foot", "Neck", "L_Collar", "R_Collar", "Head", "L_Shoulder",
        "R_Shoulder", "L_Elbow", "R_Elbow", "L_Wrist", "R_Wrist",
    ),
    {
        "pelvis": "Pelvis", "spine": "Spine1", "chest": "Spine3", "neck": "Neck", "head": "Head",
        "left_hip": "L_Hip", "left_knee": "L_Knee", "left_ankle": "L_Ankle", "left_toe": "L_Foot",
        "right_hip": "R_Hip", "right_knee": "R_Knee", "right_ankle": "R_Ankle",
        "right_toe": "R_Foot",
        "left_shoulder": "L_Shoulder", "left_elbow": "L_Elbow", "left_wrist": "L_Wrist",
        "right_shoulder": "R_Shoulder", "right_elbow": "R_Elbow", "right_wrist": "R_Wrist",
    },
)
_BVH_LIMBS = {
    "left_hip": "LeftUpLeg", "left_knee": "LeftLeg", "left_ankle": "LeftFoot",
    "right_hip": "RightUpLeg", "right_knee": "RightLeg", "right_ankle": "RightFoot",
    "left_shoulder": "LeftArm", "left_elbow": "LeftForeArm", "left_wrist": "LeftHand",
    "right_shoulder": "RightArm", "right_elbow": "RightForeArm", "right_wrist": "RightHand",
}  # fmt: skip
LAFAN = Skeleton(
    "lafan",
    (
        "Hips", "LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToe", "RightUpLeg", "RightLeg",
        "RightFoot",
        "RightToe", "Spine", "Spine1", "Spine2", "Neck", "Head", "LeftShoulder", "LeftArm",
        "LeftForeArm", "LeftHand", "RightShoulder", "RightArm", "RightForeArm", "RightHand",
    ),
    {**_BVH_LIMBS, "pelvis": "Hips", "spine": "Spine", "chest": "Spine2", "neck": "Neck",
     "head": "Head",
     "left_toe": "LeftToe", "right_toe": "RightToe"},
    up="y",
    units="cm",
)
CMU = Skeleton(
    "cmu",
    (
        "Hips", "LHipJoint", "LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase", "RHipJoint",
        "RightUpLeg", "RightLeg", "RightFoot", "RightToeBase", "LowerBack", "Spine", "Spine1",
        "Neck", "Neck1", "Head", "LeftShoulder", "LeftArm", "LeftForeArm", "LeftHand",
        "LeftFingerBase", "LeftHandIndex1", "LThumb", "RightShoulder", "RightArm", "RightForeArm",
        "RightHand", "RightFingerBase", "RightHandIndex1", "RThumb",
    ),
    {**_BVH_LIMBS, "pelvis": "Hips", "spine": "LowerBack", "chest": "Spine1", "neck": "Neck",
     "head": "Head",
     "left_toe": "LeftToeBase", "right_toe": "RightToeBase"},
    up="y",
    units="auto",
)
SKELETONS = {s.name: s for s in (SMPLH, SMPLX, LAFAN, CMU)}


def detect_skeleton(names: tuple[str, ...] | list[str]) -> Skeleton | None:
    """The known skeleton whose role joints all appear in ``names`` (the one with most shared
    names); None when none fits (the joint map must then name the joints itself)."""
    have = set(names)
    fits = [s for s in SKELETONS.values() if set(s.roles.values()) <= have]
    return max(fits, key=lambda s: len(have & set(s.joints)), default=None)
