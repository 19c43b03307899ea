"""Live view of a running graph: a built-in web page and the Foxglove WebSocket protocol."""
