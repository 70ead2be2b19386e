# failhard on a failing step stops the orchestration there.
stop_here:
  salt.state:
    - tgt: web1
    - sls: app.broken
    - failhard: True

not_reached:
  salt.function:
    - name: test.echo
    - tgt: db1
    - arg:
      - unreachable
