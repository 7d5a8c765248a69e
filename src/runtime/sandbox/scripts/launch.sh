# The launcher of an intern's runtime (run as root by `unshare --mount`, in a private mount
# namespace): mounts the intern's disk image, prepares its directories for the intern's uid, then
# becomes bubblewrap (the daemon lowers its own priority once started: COHORT_DAEMON_NICE).
# Arguments: the disk image ('' for a plain directory), its mount point, the uid, then bwrap's argv.
set -e
# The gateway's umask (077) would make the directories bwrap creates (/etc, /run) unreadable to the intern's uid.
umask 022
img=$1; mnt=$2; uid=$3; shift 3
if [ -n "$img" ]; then mount -o loop,nosuid,nodev "$img" "$mnt"; fi
cd "$mnt"
#include prepare-disk.sh
#include run-sandbox.sh
