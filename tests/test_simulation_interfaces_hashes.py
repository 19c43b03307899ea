"""The simulation_interfaces package in use is type-identical to the ROS 2 standard.

RECORDED holds the RIHS01 type hashes of the upstream definitions
(github.com/ros-simulation/simulation_interfaces, release 2.1.0, commit 172a1b1c), computed
with rosidl's hash generation (``python tests/sim_interfaces_hashes.py <upstream checkout>``).
The installed package (the workspace's compat copy, or a ROS distribution's package when one
provides it) and the compat sources must hash to exactly these values, so clients built
against any other copy of the standard talk to our bridge.
"""

from pathlib import Path

import pytest
from sim_interfaces_hashes import compute_hashes, installed_hashes, share_dirs

REPO = Path(__file__).resolve().parents[1]
COMPAT = REPO / "ros2_ws" / "compat" / "simulation_interfaces"
DEPS = ("builtin_interfaces", "std_msgs", "geometry_msgs", "action_msgs", "service_msgs",
        "unique_identifier_msgs")

RECORDED = {
    "simulation_interfaces/action/SimulateSteps":
        "RIHS01_f0837c898e1219cd73bf4c041feab41e8c533e8e1057e982744dba7b093467eb",
    "simulation_interfaces/msg/Bounds":
        "RIHS01_e8624fe51f0f5548197542697d924c5699ac7198f1e4c68e50c3ca2af73f5b3f",
    "simulation_interfaces/msg/EntityCategory":
        "RIHS01_43bdf7933fddf75f6970f7a8fe7078524355d821d390b3954bb46ac36c03dfe1",
    "simulation_interfaces/msg/EntityFilters":
        "RIHS01_8e7b12e8ea062f14c55de4877221fe1b7cd9749665a7ad8a4ab855fc4b148303",
    "simulation_interfaces/msg/EntityInfo":
        "RIHS01_3b9a2e7fa00f9a59d325b6e47904044c421561a385682027c7fc06c359806319",
    "simulation_interfaces/msg/EntityState":
        "RIHS01_2e0464a85eb80a939025075d6c20761eca6a4cb9d6baf2c0ba373467c8b598d0",
    "simulation_interfaces/msg/NamedPose":
        "RIHS01_b32da2a039b1840f605ec025b7991a18efacac662fac272818d1ae6e2b12bc27",
    "simulation_interfaces/msg/Resource":
        "RIHS01_2bb1939cf80f8d2f284afba53cbec60b5ff33759bd39b714128ea8867a34c51a",
    "simulation_interfaces/msg/Result":
        "RIHS01_cf43a306adff3337a0a47143d8f5689933bc70a30478f13b077dc1fe3bc5ad17",
    "simulation_interfaces/msg/SimulationState":
        "RIHS01_bb9f87ccdd98fba113052a512d9801e84ce732d0a2b3c2b0cb281828de36e415",
    "simulation_interfaces/msg/SimulatorFeatures":
        "RIHS01_8b101c8529bc0ea3dcf056078254768f39832b9ef0adaf93bd5cea96c0de3305",
    "simulation_interfaces/msg/SpawnEntity":
        "RIHS01_94a349a865ccf673c18c080520299c88c3d8d5f4842ecf1482d6c997ac4b69f9",
    "simulation_interfaces/msg/SpawnResult":
        "RIHS01_dbc277304b6c24bfb2a631cea8f52e2b005d583ec0a6c86b11613f5ce6486da1",
    "simulation_interfaces/msg/Spawnable":
        "RIHS01_8675aa686f0df1ed7874a6ec210fdce1ac1c07f4e49fc26ec7fb6fe729f6772e",
    "simulation_interfaces/msg/TagsFilter":
        "RIHS01_5c3efc51e8ed04c266c09cb4691ec95b964cd410558e01d8c83646b038826b45",
    "simulation_interfaces/msg/WorldResource":
        "RIHS01_e3b65ecf904b9b115673e4a343c6aa3d28c19e185a71228faa64b783afcf2403",
    "simulation_interfaces/srv/DeleteEntity":
        "RIHS01_ff7e96a5b83dc8e2bb34b8b034480028b3a24d9f8376b2c0590bac3704be3e28",
    "simulation_interfaces/srv/GetAvailableWorlds":
        "RIHS01_ce5589b5523f2732d1969a3c5a7e6b17a387091df8190c62f78d7fdd1109e3e3",
    "simulation_interfaces/srv/GetCurrentWorld":
        "RIHS01_79ed4e910e1b7a1c9f7950ff758bfba3535bf0dec669054e8af115a099724ddd",
    "simulation_interfaces/srv/GetEntities":
        "RIHS01_cb90004c48cd50f37732fb008e22c34c261dd680a723bf0f85d8437ea4498bf7",
    "simulation_interfaces/srv/GetEntitiesStates":
        "RIHS01_0a76170d0c1c90e1eaf805cfab78ea801d1f82df309a28c1f0fae4b570f19754",
    "simulation_interfaces/srv/GetEntityBounds":
        "RIHS01_17be8d36231178a5eed0de0344b55c19975581627a9aec30a4fee9926a35deed",
    "simulation_interfaces/srv/GetEntityInfo":
        "RIHS01_953b7ab6bfc35063f5c9a72463c6ce489baa10249a7fa510926d342a34b0d29e",
    "simulation_interfaces/srv/GetEntityState":
        "RIHS01_749c91f2a2353d98367b64f2995a0f5842ce92a08ec1ffb3e185540a91557fb5",
    "simulation_interfaces/srv/GetNamedPoseBounds":
        "RIHS01_59fa8dd2c68ba6771160cc66a628ac99fa95e2748fa0a43c2cc62a2e5f3f6fdc",
    "simulation_interfaces/srv/GetNamedPoses":
        "RIHS01_c3d12ab920115bfd4733f6d20516adc3968fb438538540997c37e200e02b04e3",
    "simulation_interfaces/srv/GetSimulationState":
        "RIHS01_3362dcebee4b1afebbf9c4beee5c79c1455385aded62092a892d61fde8644f30",
    "simulation_interfaces/srv/GetSimulatorFeatures":
        "RIHS01_abb9439c8cf196722a469fb6c68b44b484f198c2a1356ac38849a29c2a20a794",
    "simulation_interfaces/srv/GetSpawnables":
        "RIHS01_3e25fd827d8bcbd9db5e36ccb190efa22d6f6313897861268ab923bf091a992a",
    "simulation_interfaces/srv/LoadWorld":
        "RIHS01_87d0ded1bfddb40a74d0bedb963fdd592fbedb14d0057d597850404b73c338af",
    "simulation_interfaces/srv/ResetSimulation":
        "RIHS01_4ce285d7ff9b8ac70dcc95161f32bf54c05a6f4b13427990e41ab40c36c39646",
    "simulation_interfaces/srv/SetEntityInfo":
        "RIHS01_867fe2b6812f3e021859171f9b788560d66bb7079d640030baf6c0bb2dd2631e",
    "simulation_interfaces/srv/SetEntityState":
        "RIHS01_fba636c91d38832dbd4f6896ffce54ff98fd9929962b0533546b56ce00f988ac",
    "simulation_interfaces/srv/SetSimulationState":
        "RIHS01_a868b916dce49974f637ba252141258c4b07b0c06858b88af560e3eb6bfbcb30",
    "simulation_interfaces/srv/SpawnEntities":
        "RIHS01_41703a359ee032bf4fc230f144f531705ba039a2e97edeae1f7997dd83b04857",
    "simulation_interfaces/srv/SpawnEntity":
        "RIHS01_66860313e11009faddbfc8568e5d410d1a11607fe75eeb1308671dc0406fe3a7",
    "simulation_interfaces/srv/StepSimulation":
        "RIHS01_913fe0653690ce6bf8f09f316e6a626747012e9fca31e26719910d417aa8565c",
    "simulation_interfaces/srv/UnloadWorld":
        "RIHS01_ac7f9a73df1b5b15015d854c5ac552b7726506e22f886c6792804f0b7f88b30b",
}


def test_installed_package_hashes_equal_upstream():
    share = share_dirs("simulation_interfaces")["simulation_interfaces"]
    built = installed_hashes(share)
    assert built == RECORDED, {k: (built.get(k), v) for k, v in RECORDED.items() if built.get(k) != v}


def test_compat_sources_hash_to_upstream(tmp_path):
    computed = compute_hashes(COMPAT, "simulation_interfaces", share_dirs(*DEPS), tmp_path)
    assert computed == RECORDED


def test_runtime_types_carry_the_standard_fields():
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import StepSimulation

    assert StepSimulation.Request().steps == 1
    assert (Result.RESULT_FEATURE_UNSUPPORTED, Result.RESULT_OK, Result.RESULT_NOT_FOUND,
            Result.RESULT_INCORRECT_STATE, Result.RESULT_OPERATION_FAILED) == (0, 1, 2, 3, 4)


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
