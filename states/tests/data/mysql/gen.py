"""Record what Salt 3007.8's `mysql_database`, `mysql_user`, `mysql_grants` and `mysql_query`
states answer (`salt/states/mysql_*.py`) against the real MariaDB on 127.0.0.1:3306 (root,
no password), through the `mysql.*` execution module (PyMySQL 1.0.3 in the venv: with 1.1+
Salt 3007.8's `mysql.query` fails on its `conv` argument), the connection
given by the minion options `mysql.host/port/user/pass`.

Regenerate (from the repository root; Salt 3007.8 and PyMySQL in a venv):

    SALT_CALL=/tmp/salt-venv-h7/bin/salt-call /tmp/salt-venv-h7/bin/python \
        states/tests/data/mysql/gen.py

The objects are named `saltq_rec_*`; the Rust test replays the steps with names of its own
(`saltq_rec_` replaced by a unique prefix) and drops what it created. `mysql_query`'s
comment holds the query's run time; the test compares it with the time taken out.
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
OPTS = {"mysql.host": "127.0.0.1", "mysql.port": 3306, "mysql.user": "root", "mysql.pass": ""}


def sql(q):
    subprocess.run(["mysql", "-h", "127.0.0.1", "-uroot", "-e", q], check=False)


def clean():
    sql(f"DROP DATABASE IF EXISTS `{DB}`")
    sql(f"DROP USER IF EXISTS '{USER}'@'localhost'")
    sql(f"DROP USER IF EXISTS '{USER}'@'%'")


D = "mysql_database."
U = "mysql_user."
G = "mysql_grants."
Q = "mysql_query.run"
GRANT = [{"grant": "select,insert"}, {"database": DB + ".*"}, {"user": USER}]

STEPS = [
    ("db_absent_missing", D + "absent", [{"name": DB}], False),
    ("db_present_test", D + "present", [{"name": DB}], True),
    ("db_present", D + "present", [{"name": DB}, {"character_set": "utf8mb4"},
                                   {"collate": "utf8mb4_general_ci"}], False),
    ("db_present_again", D + "present", [{"name": DB}], False),
    ("db_same_charset", D + "present", [{"name": DB}, {"character_set": "utf8mb4"}], False),
    ("db_charset_test", D + "present", [{"name": DB}, {"character_set": "latin1"}], True),
    ("db_collate_test", D + "present", [{"name": DB}, {"character_set": "latin1"},
                                        {"collate": "latin1_swedish_ci"}], True),
    ("db_charset", D + "present", [{"name": DB}, {"character_set": "latin1"},
                                   {"collate": "latin1_swedish_ci"}], False),
    ("user_nopass", U + "present", [{"name": USER}], False),
    ("user_absent_missing", U + "absent", [{"name": USER}], False),
    ("user_present_test", U + "present", [{"name": USER}, {"password": "s3cret"}], True),
    ("user_present", U + "present", [{"name": USER}, {"password": "s3cret"}], False),
    ("user_present_again", U + "present", [{"name": USER}, {"password": "s3cret"}], False),
    ("user_hash_again", U + "present",
     [{"name": USER}, {"password_hash": "*E2D1C69E9EB91C9F8BFC29D4B6B1A2F4CCC2D6E8"}], True),
    ("user_chpass_test", U + "present", [{"name": USER}, {"password": "other"}], True),
    ("user_chpass", U + "present", [{"name": USER}, {"password": "other"}], False),
    ("user_other_host_test", U + "present", [{"name": USER}, {"host": "%"},
                                             {"password": "x"}], True),
    ("user_clear_test", U + "present", [{"name": USER}, {"allow_passwordless": True}], True),
    ("grant_absent_missing", G + "absent", [{"name": "g"}] + GRANT, False),
    ("grant_present_test", G + "present", [{"name": "g"}] + GRANT, True),
    ("grant_present", G + "present", [{"name": "g"}] + GRANT, False),
    ("grant_present_again", G + "present", [{"name": "g"}] + GRANT, False),
    ("grant_reordered", G + "present", [{"name": "g"}, {"grant": "INSERT, SELECT"},
                                        {"database": DB + ".*"}, {"user": USER}], False),
    ("grant_all_test", G + "present", [{"name": "g2"}, {"grant": "all privileges"},
                                       {"database": DB + ".*"}, {"user": USER}], True),
    ("grant_absent_test", G + "absent", [{"name": "g"}] + GRANT, True),
    ("grant_absent", G + "absent", [{"name": "g"}] + GRANT, False),
    ("grant_absent_again", G + "absent", [{"name": "g"}] + GRANT, False),
    ("query_missing_db", Q, [{"name": "q"}, {"database": "saltq_rec_nodb"},
                             {"query": "SELECT 1"}], False),
    ("query_test", Q, [{"name": "q"}, {"database": DB}, {"query": "SELECT 1"}], True),
    ("query_create", Q, [{"name": "q"}, {"database": DB},
                         {"query": "CREATE TABLE t (a INT, b VARCHAR(10))"}], False),
    ("query_insert", Q, [{"name": "q"}, {"database": DB},
                         {"query": "INSERT INTO t VALUES (1, 'x'), (2, NULL)"}], False),
    ("query_select", Q, [{"name": "q"}, {"database": DB},
                         {"query": "SELECT a, b FROM t ORDER BY a"}], False),
    ("user_absent_test", U + "absent", [{"name": USER}], True),
    ("user_absent", U + "absent", [{"name": USER}], False),
    ("user_absent_again", U + "absent", [{"name": USER}], False),
    ("db_absent_test", D + "absent", [{"name": DB}], True),
    ("db_absent", D + "absent", [{"name": DB}], False),
    ("db_absent_again", D + "absent", [{"name": DB}], False),
]

if __name__ == "__main__":
    clean()
    try:
        sysrec.record(HERE, STEPS, opts=OPTS)
    finally:
        clean()
