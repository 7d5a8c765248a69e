# Runs the sandbox ("$@") as this shell's child, not the gateway's: --die-with-parent then ties it
# to this shell (killing it ends every process inside) and not to the gateway, which may restart. A
# background job's stdin would be /dev/null, so stdin (the secret's pipe) passes on as fd 3.
# Included (not run) by launch.sh and spare-launch.sh: src/runtime/sandbox/intern.ts joins them.
exec 3<&0
"$@" <&3 3<&- &
exec 3<&-
wait $!
