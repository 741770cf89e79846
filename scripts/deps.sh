#!/usr/bin/env bash
# Installs the Debian 12 packages scalecast needs to build, test and run: only those missing.
# Run as root (or with sudo available). Safe to run repeatedly.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libboost-dev prometheus-cpp-dev libsqlite3-dev libpq-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev libabsl-dev
  python3 python3-grpcio python3-protobuf python3-setuptools
  libcli11-dev
  prometheus
  postgresql
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "deps.sh: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
