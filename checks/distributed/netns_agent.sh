#!/bin/sh
# Open MPI's launch agent for the "hosts" of netns_hosts.sh, in place of ssh
# (mpirun --mca plm_rsh_agent netns_agent.sh). Open MPI runs it as ssh would be run:
#   netns_agent.sh HOST COMMAND...        (COMMAND: "orted -mca ess env ...")
# It runs COMMAND with sh -c, as sshd would, inside HOST's network namespace and in a UTS
# namespace of its own whose host name is HOST (NOTE: Open MPI names its shared-memory files
# after the host name: two "hosts" with one name would share them and crash).
# $GRADLAB_NETNS_HOSTS names a file of "<host> <namespace>" lines: the agent's name resolution.
set -eu
host=$1
shift
ns=$(awk -v h="$host" '$1 == h { print $2 }' "${GRADLAB_NETNS_HOSTS:?the hosts file of netns_hosts.sh}")
if [ -z "$ns" ]; then
  echo "netns_agent.sh: unknown host '$host' (not in $GRADLAB_NETNS_HOSTS)" >&2
  exit 255  # what ssh returns when it cannot reach a host
fi
# shellcheck disable=SC2016  # $0 and $1 expand in the inner shell
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
