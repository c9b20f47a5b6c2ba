#!/usr/bin/env bash
# Checks that the Debian packages mergescope builds against are present and,
# when run as root, installs the missing ones with apt-get. As another user it
# prints the exact apt-get line and stops. Extra package names given as
# arguments (for example clang for the fuzz build) are checked the same way.
set -eu

# package -> how to tell it is there (a pkg-config module or a command)
checks=(
	"cmake:cmd:cmake"
	"pkg-config:cmd:pkg-config"
	"make:cmd:make"
	"gcc:cmd:cc"
	"libncurses-dev:pc:ncursesw"
	"libzstd-dev:pc:libzstd"
	"libxxhash-dev:pc:libxxhash"
	"libsqlite3-dev:pc:sqlite3"
	"libcmocka-dev:pc:cmocka"
	# the locale sources the decimal-comma tests compile de_DE.UTF-8 from
	"locales:file:/usr/share/i18n/locales/de_DE"
)
for extra in "$@"; do
	case "$extra" in
	clang) checks+=("clang:cmd:clang" "libclang-rt-14-dev:file:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a") ;;
	tmux) checks+=("tmux:cmd:tmux") ;;
	sqlite3) checks+=("sqlite3:cmd:sqlite3") ;;
	*) checks+=("$extra:pkg:$extra") ;;
	esac
done

missing=()
for c in "${checks[@]}"; do
	pkg=${c%%:*}
	rest=${c#*:}
	kind=${rest%%:*}
	what=${rest#*:}
	case "$kind" in
	cmd) command -v "$what" >/dev/null 2>&1 || missing+=("$pkg") ;;
	pc) { command -v pkg-config >/dev/null 2>&1 &&
		pkg-config --exists "$what"; } || missing+=("$pkg") ;;
	file) [ -e "$what" ] || missing+=("$pkg") ;;
	pkg) dpkg -s "$what" >/dev/null 2>&1 || missing+=("$pkg") ;;
	esac
done

[ ${#missing[@]} -eq 0 ] && exit 0

line="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "mergescope needs these Debian packages: ${missing[*]}" >&2
	echo "run as root:  apt-get update && $line" >&2
	exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
