#!/usr/bin/env bash
# kn: kineticd's REST API from a shell, a thin wrapper around curl (docs/curl.md).
#
#   kn get PATH               GET; prints the response body
#   kn post PATH [JSON]       POST (JSON: the body; "-" reads it from stdin)
#   kn put PATH [JSON]        PUT
#   kn patch PATH [JSON]      PATCH
#   kn delete PATH            DELETE
#   kn wait OP [STATE]        long-poll operation OP until it is done; prints one line
#                             (name, type, state) and fails unless it ended in STATE
#                             (default SUCCEEDED)
#   kn cluster                the active profile's cluster (projects/P/zones/Z/clusters/C)
#   kn kubeconfig [CLUSTER] [--write]
#                             a kubeconfig for CLUSTER (default: the active profile's),
#                             as `gcloud container clusters get-credentials` writes it;
#                             prints it, or with --write merges it into the first file
#                             of $KUBECONFIG (default ~/.kube/config) and makes its
#                             context current (merging into an existing file needs kubectl)
#
# PATH is relative to /v1/ (`teams`, `operations/ID`, "$(kn cluster)/nodePools") unless
# it starts with / (`/healthz`). A request that gets an error prints its status, reason
# and message to stderr and exits 1 (3 for a 5xx: worth retrying); one that cannot
# reach the server exits 2. `kn wait` retries a long-poll that failed either way (a
# replica stopping during a rolling upgrade) up to 5 times in a row, a second apart.
#
# Environment:
#   KN_URL            the API's base URL (default http://127.0.0.1:8080)
#   KN_DEV_USER       development mode (`serve --dev`): the caller, sent as X-Kinetic-User
#   KN_TOKEN          behind IAP: an OIDC identity token, sent as Authorization: Bearer
#   KN_IAP_CLIENT_ID  behind IAP, without KN_TOKEN: the OAuth client ID of IAP; kn asks
#                     gcloud for an identity token with that audience, once per command
#   KN_IMPERSONATE    with KN_IAP_CLIENT_ID: the service account gcloud impersonates
#   KN_WAIT_TIMEOUT   how long one long-poll of `kn wait` lasts (default 30s, at most 60s)
#
# Needs bash 4.4 or newer, curl 7.55 or newer, and jq.

set -euo pipefail

KN_URL=${KN_URL:-http://127.0.0.1:8080}

die() {
  printf 'kn: %s\n' "$*" >&2
  exit 2
}

# The comment above, as help: on stdout for `kn help`, on stderr (exit 2) for a misuse.
usage() {
  if [ "${1:-}" = ok ]; then
    sed -n '2,/^# Needs/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
    exit 0
  fi
  sed -n '2,/^# Needs/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

# The caller's identity, as curl arguments in AUTH: the development header, or a file
# holding the IAP token's header (a file, so that the token is not in curl's argv).
AUTH=()
AUTH_SET=false
AUTH_FILE=
set_auth() {
  "$AUTH_SET" && return
  AUTH_SET=true
  if [ -n "${KN_DEV_USER:-}" ]; then
    AUTH=(-H "X-Kinetic-User: $KN_DEV_USER")
    return
  fi
  if [ -z "${KN_TOKEN:-}" ] && [ -n "${KN_IAP_CLIENT_ID:-}" ]; then
    local args=(auth print-identity-token "--audiences=$KN_IAP_CLIENT_ID" --include-email)
    if [ -n "${KN_IMPERSONATE:-}" ]; then
      args+=("--impersonate-service-account=$KN_IMPERSONATE")
    fi
    KN_TOKEN=$(gcloud "${args[@]}") || die "gcloud could not print an identity token for $KN_IAP_CLIENT_ID"
  fi
  if [ -n "${KN_TOKEN:-}" ]; then
    AUTH_FILE=$(mktemp)
    trap 'rm -f "$AUTH_FILE"' EXIT
    printf 'Authorization: Bearer %s\n' "$KN_TOKEN" >"$AUTH_FILE"
    AUTH=(-H "@$AUTH_FILE")
  fi
}

# The full URL of PATH.
url_of() {
  case $1 in
    /*) printf '%s%s' "$KN_URL" "$1" ;;
    *) printf '%s/v1/%s' "$KN_URL" "$1" ;;
  esac
}

# Prints an error body (Google-shaped when it is) as one line on stderr.
print_error() {
  local method=$1 path=$2 code=$3 body=$4 line
  line=$(printf '%s' "$body" | jq -er '.error | select(type == "object") |
    "\(.code) \(.status) \([.details[]? | .reason? // empty] | first // "-"): \(.message)"
  ' 2>/dev/null) || line="$code $(printf '%s' "$body" | head -c 500)"
  printf 'kn: %s %s: %s\n' "$method" "$path" "$line" >&2
}

# request METHOD PATH [BODY]: prints the response body; fails on an error status.
request() {
  local method=$1 path=$2 out code body
  set_auth
  local args=(-sS -X "$method" -H 'accept: application/json' -w '\n%{http_code}' "${AUTH[@]}")
  if [ $# -ge 3 ]; then
    if [ "$3" = - ]; then
      args+=(-H 'content-type: application/json' --data-binary @-)
    else
      args+=(-H 'content-type: application/json' --data-binary "$3")
    fi
  fi
  out=$(curl "${args[@]}" "$(url_of "$path")") || die "$method $path: cannot reach $KN_URL"
  code=${out##*$'\n'}
  body=${out%"$code"}
  body=${body%$'\n'}
  if [ "$code" -ge 500 ]; then
    print_error "$method" "$path" "$code" "$body"
    return 3
  elif [ "$code" -ge 400 ]; then
    print_error "$method" "$path" "$code" "$body"
    return 1
  fi
  if [ -n "$body" ]; then
    printf '%s\n' "$body"
  fi
}

# wait OP [STATE]: long-polls until OP is done.
wait_op() {
  local name=${1#/v1/} want=${2:-SUCCEEDED} op state
  case $name in operations/*) ;; *) name=operations/$name ;; esac
  local failures=0 rc
  while :; do
    rc=0
    op=$(request POST "$name:wait?timeout=${KN_WAIT_TIMEOUT:-30s}") || rc=$?
    if [ "$rc" -eq 2 ] || [ "$rc" -eq 3 ]; then
      failures=$((failures + 1))
      [ "$failures" -lt 5 ] || return "$rc"
      printf 'kn: retrying %s:wait\n' "$name" >&2
      sleep 1
      continue
    fi
    [ "$rc" -eq 0 ] || return "$rc"
    failures=0
    if [ "$(printf '%s' "$op" | jq -r .done)" = true ]; then
      break
    fi
  done
  state=$(printf '%s' "$op" | jq -r .metadata.state)
  printf '%s' "$op" | jq -r '"\(.name) \(.metadata.type) \(.metadata.state)"'
  if [ "$state" != "$want" ]; then
    printf 'kn: %s ended %s, not %s: %s\n' "$name" "$state" "$want" \
      "$(printf '%s' "$op" | jq -r '.error | if . then
          "\(.status // .code) \([.details[]? | .reason? // empty] | first // "-"): \(.message)"
          + ([.details[]? | .metadata.step? // empty] | if length > 0 then " (step \(first))" else "" end)
        else "no error" end')" >&2
    return 1
  fi
}

# The active profile's cluster.
cluster() {
  local me
  me=$(request GET me)
  printf '%s' "$me" | jq -er '.activeProfile.cluster // empty' ||
    die "no active profile: run up, or PUT profiles/NAME {\"cluster\": ...} and POST profiles/NAME:activate"
}

# kubeconfig [CLUSTER] [--write]: prints the cluster's kubeconfig, or merges it.
kubeconfig() {
  local name='' write=false arg
  for arg in "$@"; do
    case $arg in
      --write) write=true ;;
      -*) usage ;;
      *)
        [ -z "$name" ] || usage
        name=${arg#/v1/}
        ;;
    esac
  done
  [ -n "$name" ] || name=$(cluster)
  local config
  config=$(request GET "$name/credentials" | jq -er .kubeconfig) || return
  if ! "$write"; then
    printf '%s\n' "$config"
    return
  fi
  local target=${KUBECONFIG:-$HOME/.kube/config}
  target=${target%%:*}
  mkdir -p "$(dirname "$target")"
  local new
  new=$(mktemp)
  printf '%s\n' "$config" >"$new"
  if [ -s "$target" ]; then
    command -v kubectl >/dev/null || die "merging into $target needs kubectl (or run: kn kubeconfig >FILE)"
    # The new file first: its entries and current-context win (kubectl's merge rule).
    KUBECONFIG="$new:$target" kubectl config view --flatten >"$new.merged" ||
      die "kubectl could not merge into $target"
    mv "$new.merged" "$target"
    rm -f "$new"
  else
    mv "$new" "$target"
  fi
  chmod 600 "$target"
  printf 'kn: wrote context %s to %s\n' \
    "$(printf '%s' "$config" | sed -n 's/^current-context: //p')" "$target" >&2
}

main() {
  [ $# -ge 1 ] || usage
  local cmd=$1
  shift
  case $cmd in help | -h | --help) usage ok ;; esac
  set_auth # once, here: requests run in subshells
  case $cmd in
    get | delete)
      [ $# -eq 1 ] || usage
      request "${cmd^^}" "$1"
      ;;
    post | put | patch)
      [ $# -eq 1 ] || [ $# -eq 2 ] || usage
      request "${cmd^^}" "$@"
      ;;
    wait)
      [ $# -eq 1 ] || [ $# -eq 2 ] || usage
      wait_op "$@"
      ;;
    cluster)
      [ $# -eq 0 ] || usage
      cluster
      ;;
    kubeconfig)
      [ $# -le 2 ] || usage
      kubeconfig "$@"
      ;;
    *) usage ;;
  esac
}

main "$@"
