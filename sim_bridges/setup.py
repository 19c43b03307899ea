import os
from glob import glob

from setuptools import find_packages, setup

package_name = "sim_bridges"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    # URDF assets live inside the Python package so they resolve from
    # site-packages as well as from the source tree.
    package_data={package_name: ["assets/*.urdf", "assets/*.urdf.in"]},
    include_package_data=True,
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml", "README.md"]),
        (os.path.join("share", package_name, "assets"), glob("sim_bridges/assets/*.urdf*")),
    ],
    install_requires=["setuptools", "numpy", "pybullet"],
    zip_safe=False,
    maintainer="rlstack maintainers",
    maintainer_email="rlstack@example.com",
    description="Simulator backend contract and PyBullet implementation (no ROS imports).",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},
    entry_points={"console_scripts": []},
)
