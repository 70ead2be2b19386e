"""Record what Salt 3007.8's `postgres_database`, `postgres_user`, `postgres_schema` and
`postgres_extension` states answer (`salt/states/postgres_*.py`) against the real PostgreSQL
on 127.0.0.1:5432 (user postgres, trust auth), through the `postgres.*` execution module
(psql), the connection given by the minion options `postgres.host/port/user`.

Regenerate (from the repository root; Salt 3007.8 in a venv, SALT_CALL naming its salt-call):

    SALT_CALL=/tmp/salt-venv-h7/bin/salt-call /tmp/salt-venv-h7/bin/python \
        states/tests/data/postgres/gen.py

The objects are named `saltq_rec_*`; the Rust test replays the steps with names of its own
(`saltq_rec_` replaced by a unique prefix) and drops what it created.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

sysrec.SALT_CALL = os.environ.get("SALT_CALL", sysrec.SALT_CALL)

DB = "saltq_rec_db"
USER = "saltq_rec_user"
SCHEMA = "saltq_rec_schema"
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
    psql(f'DROP ROLE IF EXISTS "{USER}_grp"')


D = "postgres_database."
U = "postgres_user."
S = "postgres_schema."
E = "postgres_extension."

STEPS = [
    ("db_absent_missing", D + "absent", [{"name": DB}], False),
    ("db_present_test", D + "present", [{"name": DB}], True),
    ("db_present", D + "present", [{"name": DB}], False),
    ("db_present_again", D + "present", [{"name": DB}], False),
    ("db_encoding_wrong", D + "present", [{"name": DB}, {"encoding": "LATIN1"}], False),
    ("db_encoding_same", D + "present", [{"name": DB}, {"encoding": "utf8"}], False),
    ("user_absent_missing", U + "absent", [{"name": USER}], False),
    ("user_present_test", U + "present", [{"name": USER}, {"password": "s3cret"}], True),
    ("user_present", U + "present", [{"name": USER}, {"password": "s3cret"}], False),
    ("user_present_again", U + "present", [{"name": USER}, {"password": "s3cret"}], False),
    ("user_createdb_test", U + "present", [{"name": USER}, {"createdb": True}], True),
    ("user_createdb", U + "present", [{"name": USER}, {"createdb": True}], False),
    ("user_createdb_again", U + "present", [{"name": USER}, {"createdb": True}], False),
    ("user_password_change", U + "present", [{"name": USER}, {"password": "other"}], False),
    (
        "user_flags",
        U + "present",
        [{"name": USER}, {"login": False}, {"superuser": False}, {"inherit": False},
         {"replication": False}, {"createroles": True}],
        False,
    ),
    ("group_present", U + "present", [{"name": USER + "_grp"}, {"login": False}], False),
    ("user_groups_test", U + "present", [{"name": USER}, {"groups": USER + "_grp"}], True),
    ("user_groups", U + "present", [{"name": USER}, {"groups": [USER + "_grp"]}], False),
    ("user_groups_again", U + "present", [{"name": USER}, {"groups": USER + "_grp"}], False),
    ("db_owner_test", D + "present", [{"name": DB}, {"owner": USER}], True),
    ("db_owner", D + "present", [{"name": DB}, {"owner": USER}], False),
    ("db_owner_again", D + "present", [{"name": DB}, {"owner": USER}], False),
    ("schema_present_test", S + "present", [{"name": SCHEMA}, {"dbname": DB}], True),
    ("schema_present", S + "present", [{"name": SCHEMA}, {"dbname": DB}, {"owner": USER}], False),
    ("schema_present_again", S + "present", [{"name": SCHEMA}, {"dbname": DB}], False),
    ("schema_absent_test", S + "absent", [{"name": SCHEMA}, {"dbname": DB}], True),
    ("schema_absent", S + "absent", [{"name": SCHEMA}, {"dbname": DB}], False),
    ("schema_absent_again", S + "absent", [{"name": SCHEMA}, {"dbname": DB}], False),
    ("ext_present_test", E + "present", [{"name": "pg_trgm"}, {"maintenance_db": DB}], True),
    ("ext_present", E + "present", [{"name": "pg_trgm"}, {"maintenance_db": DB}], False),
    ("ext_present_again", E + "present", [{"name": "pg_trgm"}, {"maintenance_db": DB}], False),
    ("ext_absent_test", E + "absent", [{"name": "pg_trgm"}, {"maintenance_db": DB}], True),
    ("ext_absent", E + "absent", [{"name": "pg_trgm"}, {"maintenance_db": DB}], False),
    ("ext_absent_again", E + "absent", [{"name": "pg_trgm"}, {"maintenance_db": DB}], False),
    ("ext_unknown", E + "present", [{"name": "saltq_no_such_ext"}, {"maintenance_db": DB}], False),
    ("db_absent_test", D + "absent", [{"name": DB}], True),
    ("db_absent", D + "absent", [{"name": DB}], False),
    ("db_absent_again", D + "absent", [{"name": DB}], False),
    ("group_absent", U + "absent", [{"name": USER + "_grp"}], False),
    ("user_absent_test", U + "absent", [{"name": USER}], True),
    ("user_absent", U + "absent", [{"name": USER}], False),
    ("user_absent_again", U + "absent", [{"name": USER}], False),
]

if __name__ == "__main__":
    clean()
    try:
        sysrec.record(HERE, STEPS, opts=OPTS)
    finally:
        clean()
