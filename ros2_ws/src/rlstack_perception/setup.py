from setuptools import find_packages, setup

package_name = "rlstack_perception"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    package_data={package_name: ["weights/*.onnx", "weights/*.json", "weights/*.npz", "wordings/*.json"]},
    include_package_data=True,
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="rlstack developers",
    maintainer_email="dev@rlstack.invalid",
    description="Segment, localise, embed and fuse objects into a semantic map you can ask in words.",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},
    entry_points={
        "console_scripts": [
            "semantic_map = rlstack_perception.node:main",
            "grasp_pose = rlstack_perception.grasp_pose_node:main",
        ],
    },
)
