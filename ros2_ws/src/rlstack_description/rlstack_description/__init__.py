"""The mobile manipulator's robot model (URDF and meshes) and a robot state publisher."""
