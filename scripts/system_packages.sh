# Sourced by scripts/setup.sh and scripts/setup_tests.sh: Debian packages, installed only when the script
# runs as root, and waiting (up to 10 minutes) for a package lock another apt holds instead of failing.
apt_updated=
apt_install() {  # apt_install WHY PACKAGE...
  local why=$1
  shift
  if [ "$(id -u)" != 0 ]; then
    echo "[setup] $why needs $* (Debian packages): ask an administrator to run: apt-get install $*" >&2
    return 1
  fi
  echo "[setup] installing $* ($why)" >&2
  local wait=(-o DPkg::Lock::Timeout=600)
  if [ -z "$apt_updated" ]; then
    apt-get "${wait[@]}" update -qq && apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get "${wait[@]}" install -y -qq "$@" >/dev/null
}
