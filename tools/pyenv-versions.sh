#!/bin/sh
# SPDX-License-Identifier: MIT
# Prints pyenv's versions folder, where the tests, benches and generators find CPython 2.7 and
# 3.6-3.13 (one installation per folder): $PYENV_ROOT/versions, else /root/.pyenv/versions
# (the tests run as root, and a root shell without pyenv's setup has no PYENV_ROOT).
#
# Usage: tools/pyenv-versions.sh     (scripts: versions=$(tools/pyenv-versions.sh))
echo "${PYENV_ROOT:-/root/.pyenv}/versions"
