from setuptools import find_packages, setup

package_name = "rlstack_adapters"

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
    description="Adapters from rlstack's command topics to standard robot controller interfaces.",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},
    entry_points={
        "console_scripts": [
            "arm_adapter = rlstack_adapters.arm_adapter:main",
            "cmd_vel_mux = rlstack_adapters.cmd_vel_mux:main",
            "twist_stamper = rlstack_adapters.twist_stamper:main",
        ],
    },
)
