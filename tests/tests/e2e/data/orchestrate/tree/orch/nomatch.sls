nobody:
  salt.state:
    - tgt: ghost*
    - sls: app.db

nobody_fn:
  salt.function:
    - name: test.ping
    - tgt: ghost*

nothing_to_run:
  salt.state:
    - tgt: db1
