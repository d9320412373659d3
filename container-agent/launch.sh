#!/bin/bash
# PID 1 of every agent container: privilege separation, the OpenSSH way (DESIGN.md, "Bash gate").
# The host starts it as root with CAP_SETUID, CAP_SETGID and CAP_SETPCAP only (Docker drops the rest, and
# no-new-privileges holds). Before anything reads input it starts
#   - the command executor (/app/executor.cjs) under the commands' uid, with an empty environment, its
#     stdin and stdout a pair of pipes and its stderr /dev/null: every bash command runs under it;
#   - tini under the agent's uid, which runs the agent with the container's stdio (the IPC stream) and the
#     other ends of the executor's pipes as descriptors 3 (answers) and 4 (requests).
# Both go through setpriv, which empties every capability set and the bounding set and clears the
# supplementary groups; this script ends by becoming tini (exec), so PID 1 keeps no capability either.
# Commands then share neither a uid nor a descriptor with the agent or PID 1: they cannot signal, trace or
# read them, whatever the bash gate says. Arguments: <agent uid:gid> <commands uid:gid>.
set -euo pipefail

ids='^[1-9][0-9]*:[1-9][0-9]*$'
if [[ $# -ne 2 || ! $1 =~ $ids || ! $2 =~ $ids || ${1%%:*} == "${2%%:*}" ]]; then
  echo "launch.sh: expected <agent uid:gid> <commands uid:gid>, two different non-root uids; got: $*" >&2
  exit 64
fi
agent_uid=${1%%:*} agent_gid=${1##*:} command_uid=${2%%:*} command_gid=${2##*:}
drop=(--clear-groups --inh-caps=-all --ambient-caps=-all --bounding-set=-all)

# Files either side writes in the group folders stay writable by the other and by the owner's group.
umask 0002

# Node 22.14+ can ignore SIGUSR1 (which otherwise opens its inspector); an older one rejects the flag.
node_flags=(--min-semi-space-size=16)
if node --disable-sigusr1 --version >/dev/null 2>&1; then node_flags+=(--disable-sigusr1); fi

# The executor's node starts only when the agent sends its first line (once it listens, or at its first
# command): booting it now would take the container's CPU from the agent's own boot.
coproc EXECUTOR {
  exec 2>/dev/null env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    setpriv --reuid="$command_uid" --regid="$command_gid" "${drop[@]}" -- \
    /bin/bash -c 'read -r && exec node /app/executor.cjs'
}

# bash keeps close-on-exec on duplicates of a coprocess's descriptors: the agent's ends are opened anew.
export CARAPACE_COMMAND_UID=$command_uid
exec setpriv --reuid="$agent_uid" --regid="$agent_gid" "${drop[@]}" -- \
  /usr/bin/tini -- node "${node_flags[@]}" /app/agent.cjs \
  3</proc/self/fd/"${EXECUTOR[0]}" 4>/proc/self/fd/"${EXECUTOR[1]}"
