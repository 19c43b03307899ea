from setuptools import find_packages, setup

package_name = "rlstack_mission"

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
    description="The fetch mission: find an object by text, drive to it, lift it, bring it back; recording tools.",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},
    entry_points={
        "console_scripts": [
            "mission = rlstack_mission.mission_node:main",
        ],
    },
)
