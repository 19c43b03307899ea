"""rlstack_nav: differential-drive navigation (pure cores + the nav_controller node).

Cores (no rclpy): :mod:`grid` (occupancy grid, distance field, inflation), :mod:`map_io`
(map_server YAML + PGM), :mod:`home_map` (map from scene geometry), :mod:`planner` (A* +
shortcutting), :mod:`controller` (regulated pure pursuit), :mod:`collision` (path check against
map and depth obstacles), :mod:`obstacles` (depth image -> obstacle points), :mod:`navigator`
(the goal state machine that ties them together), :mod:`nav_core` (the node's goal handling
and bookkeeping), :mod:`transforms` (SE(2) and static transform chains). Node: :mod:`nav_node`.
"""
