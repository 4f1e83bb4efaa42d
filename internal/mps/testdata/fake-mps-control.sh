#!/bin/sh
# Fake nvidia-cuda-mps-control for tests: keeps its state in
# $CUDA_MPS_PIPE_DIRECTORY like the real one (a "control" file marks a
# running daemon) and answers ps, lspart, sm_partition add and quit.
set -e
pipe="${CUDA_MPS_PIPE_DIRECTORY:?CUDA_MPS_PIPE_DIRECTORY unset}"
if [ "$1" = "-d" ]; then
	[ -d "$pipe" ] || { echo "pipe dir missing" >&2; exit 1; }
	echo "$CUDA_VISIBLE_DEVICES $*" > "$pipe/control"
	exit 0
fi
[ -f "$pipe/control" ] || { echo "Cannot find MPS control daemon process" >&2; exit 1; }
read -r cmd a1 a2 a3 || true
case "$cmd" in
ps)
	printf 'PID       ID        SERVER         DEVICE                    NAMESPACE      COMMAND\n'
	printf '4242      1         4200           %s    4026531836     /usr/bin/python3 train.py --bs 8\n' "$CUDA_VISIBLE_DEVICES"
	;;
lspart)
	printf 'GPU           Partition                             free    used    free  used  clients\n'
	printf '                                                    chunk   chunk    SM    SM\n'
	printf '%s      -                                 16       0       132    0   -\n' "$CUDA_VISIBLE_DEVICES"
	;;
sm_partition)
	[ "$a1" = "add" ] || exit 1
	grep -q -- "-S" "$pipe/control" || { echo "SM partitioning not enabled" >&2; exit 1; }
	echo "$a2/Dx4AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	;;
quit)
	rm -f "$pipe/control"
	;;
*)
	echo "unknown command $cmd" >&2; exit 1
	;;
esac
