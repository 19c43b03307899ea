"""ROS 2 side of rlstack_learning: the lockstep env over a sim_bridge and the training node.

The rest of the package never imports rclpy; only this subpackage does (lazily, in the
modules that need it: ``io`` is message-agnostic and imports nothing from ROS).
"""
