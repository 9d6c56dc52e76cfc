"""Redis plumbing: the connection (external or embedded), key names and Lua scripts."""
