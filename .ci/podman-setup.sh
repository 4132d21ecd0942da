#!/usr/bin/env bash
# Real podman for bootlog's tests on a root, systemd-less, registry-less Debian 12 machine
# (see docs/podman.md for why each setting is what it is).
#
#   source .ci/podman-setup.sh     # exports CONTAINERS_CONF, BOOTLOG_PODMAN_ARGS, BOOTLOG_PODMAN_HOME
#   bash .ci/podman-setup.sh       # does the same work and prints the export lines
#
# Idempotent: packages are installed only when missing, the image is imported only when absent.
# Everything podman stores lives under $BOOTLOG_PODMAN_HOME (private --root/--runroot/tmp_dir and
# event log), so nothing touches /var/lib/containers or /run/libpod.
# When podman cannot be made to work, this prints the reason on stderr and still returns 0:
# the tests that need podman then skip loudly with that reason instead of failing the run.

_bl_podman_setup() {
  local home=${BOOTLOG_PODMAN_HOME:-/tmp/bootlog-podman}
  mkdir -p "$home" || return 1

  # 1. Packages. runc, not crun: crun 1.8.1 refuses this host's hybrid cgroup layout.
  if ! command -v podman >/dev/null || ! command -v runc >/dev/null || [ ! -x /bin/busybox ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "podman-setup: podman/runc/busybox-static missing and not root; cannot install" >&2
      return 1
    fi
    # another apt run (a parallel setup) may hold the lock; wait for it rather than fail
    local i
    for i in $(seq 1 60); do
      fuser /var/lib/dpkg/lock-frontend >/dev/null 2>&1 || break
      sleep 2
    done
    apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      podman runc busybox-static </dev/null >"$home/apt.log" 2>&1 || {
      echo "podman-setup: apt-get install failed: $(tail -n 1 "$home/apt.log")" >&2
      return 1
    }
  fi

  # 2. A private store. tmp_dir is not a tmpfs here, so after a machine reboot its state would
  #    claim dead containers still run: wipe the store when the kernel boot id changed.
  local boot_id
  boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
  if [ -f "$home/boot_id" ] && [ "$(cat "$home/boot_id")" != "$boot_id" ]; then
    rm -rf "$home/storage" "$home/runroot" "$home/tmp"
  fi
  echo "$boot_id" >"$home/boot_id"
  mkdir -p "$home/tmp"

  # 3. Engine config: runc, cgroupfs, file events (in our own dir), k8s-file logs, and rlimits
  #    that root without CAP_SYS_RESOURCE may set (lowering is always allowed).
  cat >"$home/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$home/tmp/events.log"
tmp_dir = "$home/tmp"
EOF

  export BOOTLOG_PODMAN_HOME="$home"
  export CONTAINERS_CONF="$home/containers.conf"
  export BOOTLOG_PODMAN_ARGS="--root $home/storage --runroot $home/runroot"
  export BOOTLOG_PODMAN="${BOOTLOG_PODMAN:-podman}"

  # 4. A 2 MB image from the static busybox, no registry. The tar is made reproducible
  #    (mtime 0, sorted, numeric owner) so the image id is the same on every machine.
  # shellcheck disable=SC2086
  if ! podman $BOOTLOG_PODMAN_ARGS image exists localhost/logreplay:latest 2>/dev/null; then
    local rootfs="$home/rootfs"
    rm -rf "$rootfs"
    mkdir -p "$rootfs/bin" "$rootfs/data" "$rootfs/state" "$rootfs/tmp"
    cp /bin/busybox "$rootfs/bin/busybox"
    local a
    for a in $(/bin/busybox --list); do
      [ "$a" = busybox ] || ln -sf busybox "$rootfs/bin/$a"
    done
    tar -C "$rootfs" --mtime=@0 --owner=0 --group=0 --numeric-owner --sort=name \
      -cf "$home/rootfs.tar" . && touch -d @0 "$home/rootfs.tar"
    # shellcheck disable=SC2086
    podman $BOOTLOG_PODMAN_ARGS import -q --change 'CMD ["/bin/sh"]' \
      "$home/rootfs.tar" localhost/logreplay:latest >"$home/import.log" 2>&1 || {
      echo "podman-setup: podman import failed: $(tail -n 1 "$home/import.log")" >&2
      return 1
    }
  fi

  # 5. Prove a container runs (the failure modes of podman.md show up here, not in a test).
  # shellcheck disable=SC2086
  if ! podman $BOOTLOG_PODMAN_ARGS run --rm --network=none localhost/logreplay:latest \
      /bin/echo podman-ok >"$home/probe.log" 2>&1 ||
      [ "$(cat "$home/probe.log")" != podman-ok ]; then
    echo "podman-setup: podman run failed: $(tail -n 1 "$home/probe.log")" >&2
    return 1
  fi
  return 0
}

if _bl_podman_setup; then
  _bl_status="podman ready"
else
  _bl_status="podman NOT ready (tests needing it will skip with the reason)"
fi
echo "podman-setup: $_bl_status ($(command -v podman || echo 'no podman'), store ${BOOTLOG_PODMAN_HOME:-?})" >&2
unset _bl_status
unset -f _bl_podman_setup

# Executed rather than sourced: print the lines a caller can eval.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  for _v in BOOTLOG_PODMAN_HOME CONTAINERS_CONF BOOTLOG_PODMAN_ARGS BOOTLOG_PODMAN; do
    [ -n "${!_v:-}" ] && printf 'export %s=%q\n' "$_v" "${!_v}"
  done
fi
