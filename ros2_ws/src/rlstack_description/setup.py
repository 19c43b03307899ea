from glob import glob

from setuptools import find_packages, setup

package_name = "rlstack_description"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/urdf", glob("urdf/*.urdf")),
        ("share/" + package_name + "/meshes", sorted(glob("meshes/*"))),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="rlstack developers",
    maintainer_email="dev@rlstack.invalid",
    description="The mobile manipulator's URDF and meshes, and a robot state publisher.",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},
    entry_points={
        "console_scripts": [
            "robot_state_publisher = rlstack_description.state_publisher:main",
        ],
    },
)
