# Two minions in order, a failing step and its onfail recovery.
db_first:
  salt.state:
    - tgt: db1
    - sls: app.db

web_second:
  salt.state:
    - tgt: web1
    - sls:
      - app.web
    - require:
      - salt: db_first

web_migrate:
  salt.state:
    - tgt: web1
    - sls: app.broken
    - require:
      - salt: web_second

web_rollback:
  salt.state:
    - tgt: web1
    - sls: app.recover
    - onfail:
      - salt: web_migrate

announce:
  salt.function:
    - name: test.echo
    - tgt: db1,web1
    - tgt_type: list
    - arg:
      - deployed
    - require:
      - salt: web_migrate
