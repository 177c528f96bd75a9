#!/bin/sh
# Starts a child in a session (and process group) of its own, which a
# process-group kill misses, records its pid in $PIDFILE and waits for the
# timeout.
setsid sleep 1000 &
echo $! > "$PIDFILE"
echo "started the setsid child" >&2
sleep 1000
