#!/bin/sh
# Records its pid and case directory in $PIDFILE and $DIRFILE, starts a
# setsid child, and sleeps until it is killed.
setsid sleep 1000 &
echo $! > "$PIDFILE.child"
echo "$1" > "$DIRFILE"
echo $$ > "$PIDFILE"
sleep 1000
