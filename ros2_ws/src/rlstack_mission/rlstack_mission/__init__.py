"""rlstack_mission: the fetch mission and its recording tools."""
