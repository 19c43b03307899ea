"""Smoke graph: smoke_talker publishes objects and queries smoke_map, which indexes them."""
