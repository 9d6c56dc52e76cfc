"""Live delivery in each process: the hub (one pub/sub listener fanning out to local
sockets), the room relay, and chat delivery."""
