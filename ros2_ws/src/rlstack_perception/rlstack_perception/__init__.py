"""rlstack_perception: segment -> filter -> localise -> embed -> associate -> fuse.

Pure-Python cores (no rclpy): :mod:`frame`, :mod:`segment`, :mod:`localise`, :mod:`embed`,
:mod:`semantic_map`, :mod:`pipeline`, :mod:`tf_buffer`. The ROS adapter is :mod:`node`.
"""

__version__ = "0.1.0"
