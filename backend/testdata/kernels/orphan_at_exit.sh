#!/bin/sh
# Writes a valid output, then starts a grandchild through a setsid shell
# and exits without waiting: the shell records the grandchild's pid in
# $PIDFILE and exits, so the grandchild is orphaned while the harness makes
# its last scan of the kernel (TestExecContainOrphanAtExitStress).
cp "$1/x.npy" "$1/out/z.npy"
setsid sh -c 'sleep 1000 & echo $! > "$PIDFILE"'
