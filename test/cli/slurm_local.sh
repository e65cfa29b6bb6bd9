#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Slurm launch of docs/SCALE.md on a private single-node Slurm
# (scripts/slurm_local_test.sh): skipped (77) with the reason where the
# packages are missing, the test is not root, or another slurmctld runs.
#   slurm_local.sh BUILD_DIR SOURCE_DIR
exec bash "$2/scripts/slurm_local_test.sh" "$1" "$2" 3
