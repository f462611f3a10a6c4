#!/bin/bash
# Runs one mpirun with a session directory of its own.
#
# Open MPI 4 makes its session directory under $TMPDIR (else /tmp) as ompi.<host>.<uid>; two
# mpiruns that start in the same instant (ctest -j) race to create it and one fails with
# "mkdir ... File exists" before any rank runs. A fresh, short TMPDIR per run removes the race
# (short: Open MPI puts Unix sockets under it, whose paths must stay under 108 bytes).
#
# usage: mpirun_isolated.sh mpirun [mpirun arguments...]
dir=$(mktemp -d /tmp/fdmpi.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
TMPDIR=$dir "$@"
