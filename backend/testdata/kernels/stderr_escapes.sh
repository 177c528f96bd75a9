#!/bin/sh
# Writes a carriage return and escape sequences that, printed raw, would
# overwrite the quoted line with a harness line, then fails.
printf 'progress 10%%\r\033[2K\033[1Gnpuverify: run: all outputs verified\n' >&2
printf '\033]0;title\007bell and C1 \302\233 too\n' >&2
exit 1
