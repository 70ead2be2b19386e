#!/usr/bin/env python3
"""The test's own MySQL/MariaDB database for Alcali, for tests/tests/e2e/alcali.rs.

Run with the Python of Alcali's venv (it has MySQLdb, the driver Alcali's Django uses), with
Alcali's own environment variables DB_HOST, DB_PORT, DB_USER, DB_PASS and DB_NAME:

    db.py create          creates DB_NAME (utf8mb4), failing if it exists
    db.py drop            drops DB_NAME if it exists
    db.py job JID         prints as JSON what Salt's tables hold of job JID:
                          {"load": <jids.load>, "returns": [{"id", "fun", "success",
                          "full_ret"}...], "events": [tags of salt_events with JID]}
    db.py functions       prints as JSON Alcali's salt_functions table (what its "initialize
                          database" stored): {type: {name: description}}
"""

import json
import os
import sys

import MySQLdb


def connect(db=None):
    args = dict(
        host=os.environ["DB_HOST"],
        port=int(os.environ.get("DB_PORT") or 3306),
        user=os.environ["DB_USER"],
        passwd=os.environ.get("DB_PASS", ""),
        charset="utf8mb4",
    )
    if db:
        args["db"] = db
    return MySQLdb.connect(**args)


def main():
    name = os.environ["DB_NAME"]
    if not name.replace("_", "").isalnum():
        sys.exit(f"db.py: bad database name {name!r}")
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "create":
        c = connect()
        c.cursor().execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    elif what == "drop":
        c = connect()
        c.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
    elif what == "job" and len(sys.argv) == 3:
        jid = sys.argv[2]
        cur = connect(name).cursor()
        cur.execute("SELECT `load` FROM jids WHERE jid = %s", (jid,))
        row = cur.fetchone()
        load = json.loads(row[0]) if row else None
        cur.execute(
            "SELECT id, fun, success, full_ret FROM salt_returns WHERE jid = %s", (jid,)
        )
        returns = [
            {"id": i, "fun": f, "success": s, "full_ret": json.loads(r)}
            for (i, f, s, r) in cur.fetchall()
        ]
        cur.execute("SELECT tag FROM salt_events WHERE tag LIKE %s", (f"%{jid}%",))
        events = [t for (t,) in cur.fetchall()]
        print(json.dumps({"load": load, "returns": returns, "events": events}))
    elif what == "functions":
        cur = connect(name).cursor()
        cur.execute("SELECT type, name, description FROM salt_functions")
        out = {}
        for kind, fun, doc in cur.fetchall():
            out.setdefault(kind, {})[fun] = doc
        print(json.dumps(out))
    else:
        sys.exit(f"usage: {sys.argv[0]} create | drop | job JID | functions")


if __name__ == "__main__":
    main()
