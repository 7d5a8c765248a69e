# Makes a mounted intern disk (the shell's directory) ready for the intern's uid ($uid): its
# directories, their modes, and the agent's files handed to the uid once. A wake finds everything
# in place, and then starts one process here (stat) rather than one per step.
# Included (not run) by launch.sh and claim.sh: src/runtime/sandbox/intern.ts joins them.
for d in daemon agent work home; do [ -d "$d" ] || mkdir "$d"; done
[ ! -e lost+found ] || rm -rf lost+found
# The agent's uid passes through /intern to its work dir: an image's root is 0755, a plain
# directory (COHORT_INTERN_DISK_MB=0) was made 0700 by the gateway (its parents stay 0700 on the host).
# Root inside has no CAP_DAC_OVERRIDE: it enters the intern's directories as "other" (spawning the agent there).
# Directories written before isolation (or under another uid) are handed to this intern's uid once.
stat -c '%a %u %n' . daemon agent work home | while read -r mode owner name; do
  if [ "$name" = daemon ]; then want=700; else want=755; fi
  [ "$mode" = "$want" ] || chmod "$want" "$name"
  case "$name" in agent|work|home) [ "$owner" = "$uid" ] || chown -R "$uid:$uid" "$name" ;; esac
done
