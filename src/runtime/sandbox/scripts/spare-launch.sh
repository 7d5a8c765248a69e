# The launcher of a warm spare (docs/fleet.md): no intern yet, so its /intern is an empty directory
# made a shared mount, which the claim's mount (claim.sh, run in this namespace) reaches through
# into the sandbox. Arguments: that directory, then bwrap's argv.
set -e
umask 022
mnt=$1; shift
mount --bind "$mnt" "$mnt"
mount --make-shared "$mnt"
#include run-sandbox.sh
