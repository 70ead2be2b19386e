"""Record what Salt 3007.8's `mount` states answer (`salt/states/mount.py`): real tmpfs and
bind mounts under the scratch directory, the fstab a file of the scratch directory
(`config: @DIR@/fstab`), the mount cache in Salt's own cachedir.

Regenerate (from the repository root, as root where `mount -t tmpfs` works):

    /work/saltvenv/bin/python states/tests/data/mount/gen.py

Everything mounted under the scratch directory is unmounted at the end, whatever happens.
A tmpfs's device is the word `saltqtmp` (no path), so nothing depends on the directory Salt
runs in; the bind mount's device is the tmpfs's mount point.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

SCRATCH = "/tmp/saltq-rec-mount"
CONF = "@DIR@/fstab"
MNT = "@DIR@/mnt"
BIND = "@DIR@/bind"
DATA = "@DIR@/data"
M = "mount.mounted"
U = "mount.unmounted"
FP = "mount.fstab_present"
FA = "mount.fstab_absent"

SETUP = {
    "fstab": "# /etc/fstab: static file system information.\n"
    "proc\t/proc\tproc\tdefaults\t0 0\n"
    "\n"
    "UUID=1234-abcd /boot vfat defaults,noatime 0 2\n",
}



def tmpfs(opts="size=1m,mode=750", **more):
    args = [{"name": MNT}, {"device": "saltqtmp"}, {"fstype": "tmpfs"}, {"opts": opts}]
    args.append({"config": more.pop("config", CONF)})
    args.extend({k: v} for k, v in more.items())
    return args


def bind(**more):
    args = [{"name": BIND}, {"device": MNT}, {"fstype": "none"}, {"opts": "bind"}]
    args.append({"config": CONF})
    args.extend({k: v} for k, v in more.items())
    return args


def unmounted(name, **more):
    return [{"name": name}, {"config": CONF}] + [{k: v} for k, v in more.items()]


def present(**more):
    args = [{"name": "/dev/saltqdisk"}, {"fs_file": DATA}, {"fs_vfstype": "ext4"}]
    args += [{"config": CONF}, {"mount": False}]
    return args + [{k: v} for k, v in more.items()]


NEW = "@DIR@/new"
STEPS = [
    ("no_device", M, [{"name": MNT}, {"device": ""}, {"fstype": "tmpfs"}], False),
    ("no_fstype", M, [{"name": MNT}, {"device": "x"}, {"fstype": ""}], False),
    ("mounted_test", M, tmpfs(), True),
    ("missing_dir_test", M, [{"name": NEW}, {"device": "saltqtmp"}, {"fstype": "tmpfs"}], True),
    (
        "missing_dir_mkmnt_test",
        M,
        [{"name": NEW}, {"device": "saltqtmp"}, {"fstype": "tmpfs"}, {"mkmnt": True}],
        True,
    ),
    ("missing_dir", M, [{"name": NEW}, {"device": "saltqtmp"}, {"fstype": "tmpfs"}], False),
    ("bad_config_test", M, tmpfs(config="@DIR@/nosuch"), True),
    ("mounted", M, tmpfs(), False),
    ("mounted_again", M, tmpfs(), False),
    ("mounted_again_test", M, tmpfs(), True),
    ("trailing_slash", M, [{"name": MNT + "/"}] + tmpfs()[1:], False),
    ("opts_changed_test", M, tmpfs("size=2m,mode=750"), True),
    ("opts_changed", M, tmpfs("size=2m,mode=750"), False),
    ("opts_list", M, tmpfs(["size=2m", "mode=750"]), False),
    ("bind_test", M, bind(mkmnt=True), True),
    ("bind", M, bind(mkmnt=True), False),
    ("bind_again", M, bind(mkmnt=True), False),
    ("bind_no_copy", M, bind(mkmnt=True, bind_mount_copy_active_opts=False), False),
    ("unmount_bind_test", U, unmounted(BIND, persist=True), True),
    ("unmount_bind", U, unmounted(BIND, persist=True), False),
    ("unmount_mnt", U, unmounted(MNT), False),
    ("unmount_again", U, unmounted(MNT), False),
    ("purge_test", U, unmounted(MNT, persist=True), True),
    ("purge_other_device", U, unmounted(MNT, persist=True, device="/dev/other"), False),
    ("purge", U, unmounted(MNT, persist=True, device="saltqtmp"), False),
    ("purge_again", U, unmounted(MNT, persist=True), False),
    ("fstab_only_test", M, tmpfs(mount=False), True),
    ("fstab_only", M, tmpfs(mount=False), False),
    ("fstab_only_again", M, tmpfs(mount=False), False),
    ("fstab_only_new_dir", M, [{"name": NEW}] + tmpfs(mount=False)[1:], False),
    ("fstab_only_mkmnt", M, [{"name": NEW}] + tmpfs(mount=False, mkmnt=True)[1:], False),
    ("present_test", FP, present(), True),
    ("present", FP, present(), False),
    ("present_again", FP, present(), False),
    ("present_change_test", FP, present(fs_mntops="noatime", fs_passno=2), True),
    ("present_change", FP, present(fs_mntops="noatime", fs_passno=2), False),
    ("present_keep", FP, present(fs_mntops="ro", not_change=True), False),
    ("absent_test", FA, [{"name": "/dev/saltqdisk"}, {"fs_file": DATA}, {"config": CONF}], True),
    ("absent", FA, [{"name": "/dev/saltqdisk"}, {"fs_file": DATA + "/"}, {"config": CONF}], False),
    ("absent_again", FA, [{"name": "/dev/saltqdisk"}, {"fs_file": DATA}, {"config": CONF}], False),
    # Another device on a mount point: unmounted and mounted again, unless a regex allows it.
    ("one_device", M, [{"name": MNT}, {"device": "/saltqone"}, {"fstype": "tmpfs"}, {"config": CONF}], False),
    ("other_device_test", M, [{"name": MNT}, {"device": "/saltqtwo"}, {"fstype": "tmpfs"}, {"config": CONF}], True),
    ("other_device", M, [{"name": MNT}, {"device": "/saltqtwo"}, {"fstype": "tmpfs"}, {"config": CONF}], False),
    (
        "device_regex",
        M,
        [{"name": MNT}, {"device": "/saltqthree"}, {"fstype": "tmpfs"}, {"config": CONF}]
        + [{"device_name_regex": ["/nomatch", "/saltq"]}, {"persist": False}],
        False,
    ),
    ("unmount_end", U, unmounted(MNT, persist=True), False),
    ("bad_config", M, tmpfs(config="@DIR@/nosuch", mount=False), False),
    ("present_mount_by", FP, present(mount_by="uuid"), False),
    (
        "absent_mount_by",
        FA,
        [{"name": "/dev/saltqdisk"}, {"fs_file": DATA}, {"config": CONF}, {"mount_by": "uuid"}],
        False,
    ),
]


def prepare(scratch):
    os.makedirs(os.path.join(scratch, "mnt"))


def unmount_all(scratch):
    """Unmounts whatever is mounted under `scratch`, deepest first."""
    with open("/proc/self/mounts") as f:
        points = [line.split()[1] for line in f]
    for point in sorted(points, key=len, reverse=True):
        if point == scratch or point.startswith(scratch + "/"):
            subprocess.run(["umount", "-l", point], check=False)


if __name__ == "__main__":
    try:
        sysrec.record(
            HERE,
            STEPS,
            setup=SETUP,
            files=["fstab"],
            scratch=SCRATCH,
            prepare=prepare,
        )
    finally:
        unmount_all(SCRATCH)
    subprocess.run(["rm", "-rf", SCRATCH], check=False)
