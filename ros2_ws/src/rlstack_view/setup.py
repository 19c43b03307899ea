from setuptools import find_packages, setup

package_name = "rlstack_view"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    package_data={package_name: ["page.html"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="rlstack developers",
    maintainer_email="dev@rlstack.invalid",
    description="Live view of the graph: a built-in web page and the Foxglove WebSocket protocol.",
    license="Apache-2.0",
    extras_require={"test": ["pytest"]},
    entry_points={
        "console_scripts": [
            "live_view = rlstack_view.live_view:main",
        ],
    },
)
