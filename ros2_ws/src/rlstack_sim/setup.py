from setuptools import find_packages, setup

package_name = "rlstack_sim"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="rlstack developers",
    maintainer_email="dev@rlstack.invalid",
    description="sim_bridge: ROS 2 adapter around a sim_bridges simulator backend.",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},
    entry_points={
        "console_scripts": [
            "sim_bridge = rlstack_sim.bridge_node:main",
            "batch_bridge = rlstack_sim.batch_bridge:main",
            "sim_snapshots = rlstack_sim.snapshots:main",
            "ground_truth_grasp_target = rlstack_sim.ground_truth_grasp_target:main",
        ],
    },
)
