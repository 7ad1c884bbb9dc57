# Sourced by the benchmarks that create many inodes: lets the file system settle before
# timing (SETTLE=seconds, default 31; 0 = not at all). On ext4 without a journal (this
# machine's root) creating an inode skips, one by one, every inode of its group deleted in
# the last 30 s; `sync` writes those blocks back, the wait lets them age, and where it may
# (root) the clean caches are dropped too (DROP_CACHES=0 leaves them), so that a run does not
# measure the cleanup of the one before it. Sets DROPPED=1 when the caches were dropped.
settle_fs() {
  if [ "${SETTLE:-31}" -gt 0 ]; then
    sync
    sleep "${SETTLE:-31}"
    if [ "${DROP_CACHES:-1}" = 1 ] && [ -w /proc/sys/vm/drop_caches ]; then
      sync
      echo 3 >/proc/sys/vm/drop_caches
      DROPPED=1
      echo "settle: page cache dropped after ${SETTLE:-31} s" >&2
    fi
  fi
}
