#!/usr/bin/env bash
# Runs a command (for `make test-wheel`: pytest on the installed wheel) where the system's zstd,
# brotli, snappy, highwayhash, ISA-L, libjpeg-turbo and libwebp cannot be loaded: in a private
# mount namespace each of their shared-library files is covered by /dev/null, so a wheel that
# still needs one fails to import (Pillow's wheel brings its own libwebp). The covered files are
# listed in SPELT_HIDDEN_LIBRARIES (":"-separated) for
# tests/wheel/test_installed_wheel.py. zlib stays readable, since CPython's own zlib module
# loads it; that test checks that Spelt's modules do not.
# Needs root or unprivileged user namespaces (unshare(1)); fails otherwise.
set -euo pipefail
if [ -z "${SPELT_IN_PRIVATE_MOUNTS:-}" ]; then
  namespace=(unshare --mount --propagation private)
  [ "$(id -u)" = 0 ] || namespace=(unshare --user --map-root-user --mount --propagation private)
  SPELT_IN_PRIVATE_MOUNTS=1 exec "${namespace[@]}" "$0" "$@"
fi
# tests/test_array_record.py computes Riegeli's hashes with highwayhash itself: it gets a
# private copy, outside every library search path, so Spelt cannot load it by its name.
private=$(mktemp -d)
trap 'rm -rf "$private"' EXIT
# (awk reads all of ldconfig's output: an early exit would kill ldconfig with SIGPIPE, which
# pipefail turns into this script's failure)
highwayhash=$(ldconfig -p | awk '/libhighwayhash\.so/ && !found {print $NF; found = 1}')
if [ -n "$highwayhash" ]; then
  cp "$(readlink -f "$highwayhash")" "$private/highwayhash-for-tests.so"
  export SPELT_TEST_HIGHWAYHASH="$private/highwayhash-for-tests.so"
fi
hidden=()
for lib in $(ldconfig -p | awk '/lib(zstd|brotli(common|dec|enc)|snappy|highwayhash|isal|jpeg|webp)\.so/ {print $NF}'); do
  file=$(readlink -f "$lib")
  case " ${hidden[*]-} " in *" $file "*) continue ;; esac
  mount --bind /dev/null "$file"
  hidden+=("$file")
done
SPELT_HIDDEN_LIBRARIES=$(IFS=:; echo "${hidden[*]-}")
export SPELT_HIDDEN_LIBRARIES
echo "hidden from this process tree: ${SPELT_HIDDEN_LIBRARIES:-nothing}" >&2
"$@"
