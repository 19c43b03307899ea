from setuptools import find_packages, setup

package_name = "rlstack_localization"

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
    description="Depth-camera localisation against an occupancy map: publishes map -> odom (AMCL's contract).",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},
    entry_points={
        "console_scripts": [
            "localizer = rlstack_localization.localizer_node:main",
        ],
    },
)
