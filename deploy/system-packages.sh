#!/usr/bin/env bash
# The system packages `make test` and `make demo` need, installed where this can (root with apt-get),
# otherwise named in the one command to run. Usage: deploy/system-packages.sh test|demo|compose
#   test: chromium (browser tests), bubblewrap + libseccomp2 (the code sandbox), Debian's python3 (the
#         sandbox's interpreter when root drops to nobody), util-linux (setpriv, the unprivileged attack
#         suite), postgresql (initdb and pg_ctl for the private database the restart tests use).
#   demo: bubblewrap + libseccomp2 + python3 (the code verifier's sandbox).
#   compose: docker.io (the engine) + debootstrap (base images built from Debian's packages), for the
#         self-hosting test (`make test-compose`, tests/compose/); nothing of the others.
set -euo pipefail
want="${1:-test}"
missing=""
if [ "$want" = compose ]; then
  command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
  command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
else
  command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
  ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || missing="$missing libseccomp2"
  [ -x /usr/bin/python3 ] || missing="$missing python3"
fi
if [ "$want" = test ]; then
  [ -x /usr/bin/chromium ] || missing="$missing chromium"
  command -v setpriv >/dev/null 2>&1 || missing="$missing util-linux"
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$missing postgresql"
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing system packages:$missing"
  apt-get update -qq
  # shellcheck disable=SC2086  # one word per package
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  exit 0
fi
if [ "$want" = demo ]; then
  # The demo trains without them; only a code verifier would need the sandbox, and says so when it runs.
  echo "Note: the code verifier's sandbox needs:$missing (sudo apt-get install -y$missing)" >&2
  exit 0
fi
echo "Missing system packages:$missing" >&2
echo "Run once, then make test again: sudo apt-get install -y$missing" >&2
exit 1
