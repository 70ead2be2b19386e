"""Record what Salt 3007.8's `postgres_privileges.present`/`absent` answer
(`salt/states/postgres_privileges.py` over `salt/modules/postgres.py`) against the real
PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth): a database `saltq_rec_pdb` with a
table `t`, a user `saltq_rec_puser` and a group `saltq_rec_pgrp`, made before the first step
and dropped after the last. The Rust test makes its own under a unique prefix.

Regenerate (from the repository root; Salt 3007.8 in a venv):

    SALT_CALL=/tmp/salt-venv-h7/bin/salt-call /tmp/salt-venv-h7/bin/python \
        states/tests/data/postgres_privileges/gen.py
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

sysrec.SALT_CALL = os.environ.get("SALT_CALL", sysrec.SALT_CALL)

DB = "saltq_rec_pdb"
USER = "saltq_rec_puser"
GROUP = "saltq_rec_pgrp"
OPTS = {"postgres.host": "127.0.0.1", "postgres.port": 5432, "postgres.user": "postgres"}


def psql(sql, db="postgres"):
    subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", db, "-c", sql],
        check=False,
        capture_output=True,
    )


def clean():
    psql(f'DROP DATABASE IF EXISTS "{DB}"')
    psql(f'DROP ROLE IF EXISTS "{USER}"')
    psql(f'DROP ROLE IF EXISTS "{GROUP}"')


def prepare(_scratch):
    psql(f'CREATE DATABASE "{DB}"')
    psql(f'CREATE ROLE "{USER}" LOGIN')
    psql(f'CREATE ROLE "{GROUP}" NOLOGIN')
    psql("CREATE TABLE t (a int)", db=DB)


P = "postgres_privileges.present"
A = "postgres_privileges.absent"


def on(obj, typ, *extra):
    return [{"name": USER}, {"object_name": obj}, {"object_type": typ}] + list(extra)


MDB = {"maintenance_db": DB}

STEPS = [
    ("db_test", P, on(DB, "database", {"privileges": ["CONNECT"]}), True),
    ("db", P, on(DB, "database", {"privileges": ["CONNECT"]}), False),
    ("db_again", P, on(DB, "database", {"privileges": ["CONNECT"]}), False),
    ("table_test", P, on("t", "table", {"privileges": ["SELECT", "insert"]}, MDB), True),
    ("table", P, on("t", "table", {"privileges": ["SELECT", "insert"]}, MDB), False),
    ("table_again", P, on("t", "table", {"privileges": ["SELECT", "INSERT"]}, MDB), False),
    ("table_subset", P, on("t", "table", {"privileges": ["SELECT"]}, MDB), False),
    ("table_all_test", P, on("t", "table", {"privileges": ["ALL"]}, MDB), True),
    ("schema", P, on("public", "schema", {"privileges": ["USAGE"]}, MDB), False),
    ("group_test", P, on(GROUP, "group"), True),
    ("group", P, on(GROUP, "group"), False),
    ("group_again", P, on(GROUP, "group"), False),
    ("table_bad_priv", P, on("t", "table", {"privileges": ["FLY"]}, MDB), False),
    ("bad_type", P, on("t", "tabel", {"privileges": ["SELECT"]}, MDB), False),
    ("group_with_privs", P, on(GROUP, "group", {"privileges": ["SELECT"]}), False),
    ("table_absent_test", A, on("t", "table", {"privileges": ["INSERT"]}, MDB), True),
    ("table_absent", A, on("t", "table", {"privileges": ["INSERT"]}, MDB), False),
    ("table_absent_again", A, on("t", "table", {"privileges": ["INSERT"]}, MDB), False),
    ("group_absent", A, on(GROUP, "group"), False),
    ("group_absent_again", A, on(GROUP, "group"), False),
    ("db_absent", A, on(DB, "database", {"privileges": ["CONNECT"]}), False),
    ("db_absent_again", A, on(DB, "database", {"privileges": ["CONNECT"]}), False),
]

if __name__ == "__main__":
    clean()
    try:
        sysrec.record(HERE, STEPS, opts=OPTS, prepare=prepare)
    finally:
        clean()
