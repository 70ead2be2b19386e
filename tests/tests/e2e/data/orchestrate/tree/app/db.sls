db_schema:
  test.succeed_with_changes:
    - name: schema

db_ready:
  test.succeed_without_changes:
    - name: ready
