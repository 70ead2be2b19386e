"""Record what Salt 3007.8's `archive.extracted` answers (`salt/states/archive.py`), on
archives kept beside this script, extracted into the scratch directory.

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/archive/gen.py

The archives (`app.tar.gz`, `app.tar.bz2`, `app.zip`, `flat.tar.gz`, `bad.tar.gz`) are made
once by `make_archives()` with fixed times and modes, so they and their hashes stay the same;
delete them to make them again. The ownership steps use the user and group `nobody` and
`nogroup`.
"""

import hashlib
import io
import os
import shutil
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

ARCHIVES = ["app.tar.gz", "app.tar.bz2", "app.zip", "flat.tar.gz", "bad.tar.gz"]
MEMBERS = [
    ("app/", None, 0o755),
    ("app/bin/", None, 0o755),
    ("app/bin/run.sh", b"#!/bin/sh\necho run\n", 0o755),
    ("app/README", b"the app\n", 0o644),
    ("app/docs/", None, 0o755),
    ("app/docs/guide.txt", b"guide\n", 0o644),
    ("app/link", "README", 0o777),
]


def make_tar(path, mode, members):
    with tarfile.open(path, mode, format=tarfile.GNU_FORMAT) as tar:
        for name, data, perm in members:
            info = tarfile.TarInfo(name.rstrip("/"))
            info.mtime = 1700000000
            info.mode = perm
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif isinstance(data, str):
                info.type = tarfile.SYMTYPE
                info.linkname = data
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def make_archives():
    if all(os.path.exists(os.path.join(HERE, a)) for a in ARCHIVES):
        return
    make_tar(os.path.join(HERE, "app.tar.gz"), "w:gz", MEMBERS)
    make_tar(os.path.join(HERE, "app.tar.bz2"), "w:bz2", MEMBERS)
    make_tar(
        os.path.join(HERE, "flat.tar.gz"),
        "w:gz",
        [("a.txt", b"a\n", 0o644), ("b.txt", b"b\n", 0o644)],
    )
    with open(os.path.join(HERE, "bad.tar.gz"), "wb") as f:
        f.write(b"this is not an archive\n")
    with zipfile.ZipFile(os.path.join(HERE, "app.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, perm in MEMBERS:
            if isinstance(data, str):
                continue
            info = zipfile.ZipInfo(name, date_time=(2023, 11, 14, 22, 13, 20))
            info.external_attr = ((0o40000 if data is None else 0o100000) | perm) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data or b"")


def sha256(name):
    with open(os.path.join(HERE, name), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def prepare(scratch):
    for a in ARCHIVES:
        shutil.copy(os.path.join(HERE, a), os.path.join(scratch, a))
    shutil.copy(os.path.join(HERE, "app.tar.gz"), os.path.join(scratch, "archive.bin"))


E = "archive.extracted"


def steps():
    good = sha256("app.tar.gz")
    return [
        ("tar_test", E, [{"name": "@DIR@/out1"}, {"source": "@DIR@/app.tar.gz"}], True),
        ("tar", E, [{"name": "@DIR@/out1"}, {"source": "@DIR@/app.tar.gz"}], False),
        ("tar_again", E, [{"name": "@DIR@/out1"}, {"source": "@DIR@/app.tar.gz"}], False),
        ("tar_again_test", E, [{"name": "@DIR@/out1"}, {"source": "@DIR@/app.tar.gz"}], True),
        ("remove_one", "file.absent", [{"name": "@DIR@/out1/app/README"}], False),
        ("tar_missing_file_test", E, [{"name": "@DIR@/out1/"}, {"source": "@DIR@/app.tar.gz"}], True),
        ("tar_missing_file", E, [{"name": "@DIR@/out1/"}, {"source": "@DIR@/app.tar.gz"}], False),
        ("hash_ok", E, [{"name": "@DIR@/out2"}, {"source": "@DIR@/app.tar.gz"}, {"source_hash": "sha256=" + good}], False),
        ("hash_bad_test", E, [{"name": "@DIR@/out3"}, {"source": "@DIR@/app.tar.gz"}, {"source_hash": "sha256=" + "0" * 64}], True),
        ("hash_bad", E, [{"name": "@DIR@/out3"}, {"source": "@DIR@/app.tar.gz"}, {"source_hash": "0" * 64}], False),
        ("hash_bad_present", E, [{"name": "@DIR@/out1"}, {"source": "@DIR@/app.tar.gz"}, {"source_hash": "0" * 64}], False),
        ("if_missing", E, [{"name": "@DIR@/out4"}, {"source": "@DIR@/app.tar.gz"}, {"if_missing": "@DIR@/out1"}], False),
        ("toplevel", E, [{"name": "@DIR@/out5"}, {"source": "@DIR@/flat.tar.gz"}], False),
        ("toplevel_off", E, [{"name": "@DIR@/out5"}, {"source": "@DIR@/flat.tar.gz"}, {"enforce_toplevel": False}], False),
        ("zip", E, [{"name": "@DIR@/out6"}, {"source": "@DIR@/app.zip"}], False),
        ("zip_again", E, [{"name": "@DIR@/out6"}, {"source": "@DIR@/app.zip"}], False),
        ("bz2_trim", E, [{"name": "@DIR@/out7"}, {"source": "@DIR@/app.tar.bz2"}, {"trim_output": 2}], False),
        ("zip_trim", E, [{"name": "@DIR@/out8"}, {"source": "@DIR@/app.zip"}, {"trim_output": 3}], False),
        ("overwrite", E, [{"name": "@DIR@/out7"}, {"source": "@DIR@/app.tar.bz2"}, {"overwrite": True}], False),
        ("clean", E, [{"name": "@DIR@/out7"}, {"source": "@DIR@/app.tar.bz2"}, {"overwrite": True}, {"clean": True}], False),
        ("owner_test", E, [{"name": "@DIR@/out1"}, {"source": "@DIR@/app.tar.gz"}, {"user": "nobody"}, {"group": "nogroup"}], True),
        ("owner", E, [{"name": "@DIR@/out1"}, {"source": "@DIR@/app.tar.gz"}, {"user": "nobody"}, {"group": "nogroup"}], False),
        ("owner_again", E, [{"name": "@DIR@/out1"}, {"source": "@DIR@/app.tar.gz"}, {"user": "nobody"}, {"group": "nogroup"}], False),
        ("no_user", E, [{"name": "@DIR@/out1"}, {"source": "@DIR@/app.tar.gz"}, {"user": "saltq-nosuch-user"}], False),
        ("relative", E, [{"name": "out9"}, {"source": "@DIR@/app.tar.gz"}], False),
        ("no_source", E, [{"name": "@DIR@/out9"}, {"source": "@DIR@/nosuch.tar.gz"}], False),
        ("bad_archive", E, [{"name": "@DIR@/out9"}, {"source": "@DIR@/bad.tar.gz"}], False),
        ("unguessable", E, [{"name": "@DIR@/out9"}, {"source": "@DIR@/archive.bin"}], False),
        ("format_given", E, [{"name": "@DIR@/out9"}, {"source": "@DIR@/archive.bin"}, {"archive_format": "tar"}], False),
        ("name_is_file", E, [{"name": "@DIR@/app.zip"}, {"source": "@DIR@/app.tar.gz"}], False),
        ("password_tar", E, [{"name": "@DIR@/out10"}, {"source": "@DIR@/app.tar.gz"}, {"password": "x"}], False),
        ("incorrect_type", E, [{"name": "@DIR@/out11"}, {"source": "@DIR@/flat.tar.gz"}, {"enforce_toplevel": False}], False),
    ]


def prepare_all(scratch):
    prepare(scratch)
    os.makedirs(os.path.join(scratch, "out11", "a.txt"))


if __name__ == "__main__":
    make_archives()
    scratch = sysrec.record(HERE, steps(), prepare=prepare_all)
    shutil.rmtree(scratch, ignore_errors=True)
