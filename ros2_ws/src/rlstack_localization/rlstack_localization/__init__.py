"""rlstack_localization: depth-camera localisation against the occupancy map (map -> odom)."""
