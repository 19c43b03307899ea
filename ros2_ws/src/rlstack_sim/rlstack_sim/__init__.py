"""rlstack_sim: the sim_bridge node (ROS 2 adapter around a sim_bridges backend).

Pure helpers (no rclpy): :mod:`rlstack_sim.core` (command handling, stepping, wheel odometry,
reset, diagnostics values), :mod:`rlstack_sim.commands` (validation, limits, watchdog),
:mod:`rlstack_sim.parameters` (the parameter table), :mod:`rlstack_sim.config` (parameter checks,
schedules), :mod:`rlstack_sim.convert` (backend data -> ROS messages). The node itself:
:mod:`rlstack_sim.bridge_node`.
"""
