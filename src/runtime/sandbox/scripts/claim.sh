# Gives a spare its intern (run by nsenter in the spare launcher's mount namespace): the intern's
# disk image, or its plain directory, mounted on the spare's /intern, and prepared as at a start.
# Arguments: the disk image ('' for a plain directory), the plain directory, the mount point, the uid.
set -e
umask 022
img=$1; src=$2; mnt=$3; uid=$4
if [ -n "$img" ]; then mount -o loop,nosuid,nodev "$img" "$mnt"; else mount --bind "$src" "$mnt"; fi
cd "$mnt"
#include prepare-disk.sh
