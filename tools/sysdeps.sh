#!/bin/sh
# sysdeps.sh installs, with apt-get, the Debian package of every missing
# command or file named by its arguments, and only those. Each argument is
#   WHAT:PACKAGE:PURPOSE
# where WHAT is a command or the absolute path of a file. The packages are
# named with their purpose before anything is installed. apt-get needs
# root; without it (or without apt-get) the script names the packages to
# install and fails.
#
# etcd-server is special: Debian's package enables and starts a system
# etcd on 127.0.0.1:2379 at every boot. The tests start their own servers,
# so it is installed with its service neither started (policy-rc.d refuses
# every start while apt-get runs) nor enabled (disabled right after).
set -eu

missing=""
why=""
for dep in "$@"; do
	what="${dep%%:*}"
	rest="${dep#*:}"
	pkg="${rest%%:*}"
	purpose="${rest#*:}"
	case "$what" in
	/*) [ -e "$what" ] && continue ;;
	*) command -v "$what" >/dev/null 2>&1 && continue ;;
	esac
	case " $missing " in *" $pkg "*) continue ;; esac
	missing="$missing $pkg"
	why="$why
  $pkg: $purpose"
done
[ -z "$missing" ] && exit 0

echo "missing Debian packages:$why"
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "run as root, or install them: apt-get install$missing"
	exit 1
fi

policy=/usr/sbin/policy-rc.d
ours=""
case " $missing " in
*" etcd-server "*)
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\n# written by kvdescriptor tools/sysdeps.sh while it installs etcd-server\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		ours=1
	fi
	;;
esac
cleanup() { [ -n "$ours" ] && rm -f "$policy"; return 0; }
trap cleanup EXIT

echo "apt-get install$missing (this may take a few minutes)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null

case " $missing " in
*" etcd-server "*)
	# Disable the unit the package enabled, whether or not systemd runs.
	if command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now etcd.service >/dev/null 2>&1 || true
	fi
	if command -v deb-systemd-helper >/dev/null 2>&1; then
		deb-systemd-helper disable etcd.service >/dev/null 2>&1 || true
	fi
	rm -f /etc/systemd/system/multi-user.target.wants/etcd.service
	echo "etcd-server installed; its system service is neither started nor enabled"
	;;
esac
