from setuptools import find_packages, setup

package_name = "rlstack_learning"

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
    description="Gymnasium envs on sim_bridges, SB3 training CLI, ONNX policy bundles, lockstep training node.",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},
    entry_points={
        "console_scripts": [
            "train = rlstack_learning.train:main",
            "play = rlstack_learning.play:main",
            "export = rlstack_learning.export:main",
            "train_node = rlstack_learning.ros.train_node:main",
        ],
    },
)
