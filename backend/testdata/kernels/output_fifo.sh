#!/bin/sh
# Leaves the output as a FIFO that no one writes.
mkfifo "$1/out/z.npy"
