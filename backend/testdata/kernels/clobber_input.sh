#!/bin/sh
# Runs the real kernel given as $1, then writes into its input x.npy: the
# first element becomes +Inf (fp16 0x7c00), as an in-place kernel that
# reuses its input buffer would. $2 is the case directory.
"$1" "$2" || exit
off=$(( $(od -An -tu2 -j8 -N2 "$2/x.npy" | tr -d ' ') + 10 ))
printf '\000\174' | dd of="$2/x.npy" bs=1 seek="$off" conv=notrunc 2>/dev/null
