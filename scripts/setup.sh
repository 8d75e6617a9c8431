#!/usr/bin/env bash
# Makes this machine ready to run the service and its tests:
#   - node_modules (npm ci) when missing,
#   - FerretDB 1.24.2 built with Go into a cache folder outside the repo, once per machine,
#   - a reachable Redis (the machine's, or a local redis-server started on 127.0.0.1:6379),
#   - a PostgreSQL on 127.0.0.1:5432 for FerretDB's data (the machine's; else Debian's postgresql, installed and
#     started when this runs as root with apt-get, loopback connections trusted; else FerretDB falls back to SQLite),
#   - with --with-browser (the test command): Debian's Chromium for the browser tests, installed with apt-get
#     when missing (CHROMIUM_PATH, default /usr/bin/chromium).
# Idempotent and quiet when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

FERRETDB_VERSION=v1.24.2
CACHE_DIR="${SVC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-ferretdb}"
FERRETDB_BIN="${FERRETDB_BIN:-$CACHE_DIR/$FERRETDB_VERSION/ferretdb}"

# npm 11.19 writes lockfiles without other platforms' optional binaries (@swc/core-darwin-*, …) when
# the registry does not offer them, and then its own `npm ci` refuses that lockfile as out of sync;
# npm 10 installs the same lockfile exactly. So this npm is asked first, quietly: `npm ci --dry-run`
# resolves the tree and checks the lockfile without installing anything (a few seconds). On that one
# refusal the install is npm 10's npm ci, with a one-line notice; the refusal itself is printed only
# if npm 10 fails too. Any other failure is left to the real npm ci, which reports it.
install_dependencies() {
  echo "setup: installing npm dependencies (npm ci)"
  local refusal
  refusal=$(mktemp)
  if npm ci --dry-run --ignore-scripts --no-audit --no-fund >"$refusal" 2>&1 \
    || ! grep -q "can only install packages when your package.json and package-lock.json" "$refusal"; then
    rm -f "$refusal"
    npm ci --no-audit --no-fund
    return
  fi
  echo "setup: npm $(npm -v) refuses the lockfile's platform entries; installing the same lockfile with npm 10"
  if npx -y npm@10 ci --no-audit --no-fund; then
    rm -f "$refusal"
    return
  fi
  echo "setup: npm 10 failed too; npm $(npm -v) had refused the lockfile with:" >&2
  cat "$refusal" >&2
  rm -f "$refusal"
  return 1
}

WITH_BROWSER=0
for arg in "$@"; do
  case "$arg" in
    --with-browser) WITH_BROWSER=1 ;;
    *) echo "setup: unknown option $arg"; exit 2 ;;
  esac
done

if [ ! -d node_modules ]; then
  install_dependencies
fi

if [ -z "${MONGO_URL:-}" ] && [ ! -x "$FERRETDB_BIN" ]; then
  command -v go >/dev/null || { echo "setup: Go is needed to build FerretDB (or set MONGO_URL)"; exit 1; }
  echo "setup: building FerretDB $FERRETDB_VERSION into $FERRETDB_BIN (once per machine, about a minute)"
  work=$(mktemp -d)
  trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
  # `go install …@version` needs the module proxy's version list, which is not always reachable;
  # downloading the exact version and building it from a writable copy needs only the module itself.
  src=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "github.com/FerretDB/FerretDB@$FERRETDB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] || { echo "setup: could not download FerretDB $FERRETDB_VERSION"; exit 1; }
  cp -r "$src" "$work/ferretdb"
  chmod -R u+w "$work/ferretdb"
  # FerretDB embeds its version from build/version/version.txt, which release builds generate.
  echo "$FERRETDB_VERSION" > "$work/ferretdb/build/version/version.txt"
  mkdir -p "$(dirname "$FERRETDB_BIN")"
  (cd "$work/ferretdb" && CGO_ENABLED=0 go build -trimpath -o "$FERRETDB_BIN.tmp" ./cmd/ferretdb)
  mv "$FERRETDB_BIN.tmp" "$FERRETDB_BIN"
  "$FERRETDB_BIN" --version | sed -n 1p # not head: under pipefail its early exit could end the script on SIGPIPE
fi

if [ -z "${REDIS_URL:-}" ]; then
  if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
    command -v redis-server >/dev/null || { echo "setup: no Redis on 127.0.0.1:6379 and no redis-server (apt-get install redis-server, or set REDIS_URL)"; exit 1; }
    echo "setup: starting redis-server on 127.0.0.1:6379"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --maxmemory-policy noeviction >/dev/null
    for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null && break; sleep 0.1; done
  fi
fi

pg_answers() { (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; }
if [ -z "${MONGO_URL:-}" ] && [ -z "${PG_URL:-}" ] && [ "${FERRETDB_BACKEND:-}" != sqlite ] && ! pg_answers; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    installed=0
    if [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
      echo "setup: installing Debian's postgresql for FerretDB's data (once per machine)"
      export DEBIAN_FRONTEND=noninteractive
      if apt-get install -y --no-install-recommends postgresql >/dev/null 2>&1 \
        || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends postgresql >/dev/null 2>&1; }; then
        installed=1
      fi
    fi
    version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
    if [ -n "$version" ]; then
      if [ "$installed" = 1 ]; then
        # the cluster this script just made: trust loopback TCP, as the tests and the dev command connect (PG_URL)
        sed -i '1i host all all 127.0.0.1/32 trust' "/etc/postgresql/$version/main/pg_hba.conf"
      fi
      echo "setup: starting PostgreSQL $version on 127.0.0.1:5432"
      pg_ctlcluster "$version" main start >/dev/null 2>&1 || pg_ctlcluster "$version" main reload >/dev/null 2>&1 || true
      for _ in $(seq 100); do pg_answers && break; sleep 0.1; done
    fi
  fi
  pg_answers || echo "setup: no PostgreSQL on 127.0.0.1:5432 (set PG_URL, or install postgresql): FerretDB will keep its data in SQLite, several times slower (docs/performance.md)"
fi

CHROMIUM_PATH="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ "$WITH_BROWSER" = 1 ] && [ ! -x "$CHROMIUM_PATH" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing Debian's chromium for the browser tests (once per machine)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends chromium >/dev/null || { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null; }
  else
    echo "setup: the browser tests need Chromium at $CHROMIUM_PATH: sudo apt-get install chromium (or set CHROMIUM_PATH)"
    exit 1
  fi
fi
